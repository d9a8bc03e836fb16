package bench

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/internal/bench/dbsqlc"
	"github.com/oceanway/core/internal/outbox/transport"
)

// consumerSchemaSQL creates the consumer's table (also the schema sqlc
// reads for queries/).
//
//go:embed schema/consumer.sql
var consumerSchemaSQL string

var queries = dbsqlc.New()

// receiptConsumer is the bench's core_operations consumer: a real consumer
// with its own database. Per delivery it builds an
// OperationsProjectionAppliedReceipt@1, stores it insert-or-compare by event
// id in one statement (its own transaction, committed before the ack is
// returned) and acknowledges with it. A redelivery of an applied event
// returns the stored receipt byte for byte; the same event id with another
// envelope digest is a non-retryable conflict. It applies no projection
// effect: it measures the outbox's cost, not the Operations projector's.
type receiptConsumer struct {
	pool *pgxpool.Pool
}

// errDigestConflict is a redelivery whose envelope digest differs from the
// applied one.
var errDigestConflict = errors.New("bench consumer: same event id, different envelope digest")

func (c *receiptConsumer) Deliver(ctx context.Context, d transport.Delivery) (transport.Result, error) {
	return c.DeliverBatch(ctx, []transport.Delivery{d})[0].Unpack()
}

// DeliverBatch applies several deliveries in one statement (one consumer
// transaction, one commit) and answers each: a new event with its new
// receipt, an event applied before with the stored receipt byte for byte,
// a digest conflict as non-retryable. A database failure fails every
// delivery of the batch as retryable (nothing was applied: the statement is
// atomic).
func (c *receiptConsumer) DeliverBatch(ctx context.Context, ds []transport.Delivery) []transport.Answer {
	out := make([]transport.Answer, len(ds))
	built := make([]*receipt.OperationsProjectionAppliedReceipt, len(ds))
	bodies := make([][]byte, len(ds))
	var p dbsqlc.ReceiptInsertBatchParams
	for i, d := range ds {
		r, err := receipt.NewOperationsProjectionAppliedReceipt(uuid.NewString(), d.Member.ProjectionTarget, receipt.EventFacts{
			EventID: d.EventID, EventType: d.EventType, EventSchemaVersion: d.EventSchemaVersion, EnvelopeDigest: d.EnvelopeDigest,
		}, time.Now())
		if err != nil {
			out[i].Err = transport.NonRetryable("receipt_build", err)
			continue
		}
		body, err := jcs.Marshal(r.ToJSON())
		if err != nil {
			out[i].Err = transport.NonRetryable("receipt_encode", err)
			continue
		}
		built[i], bodies[i] = r, body
		p.EventIds = append(p.EventIds, d.EventID)
		p.ConsumerNames = append(p.ConsumerNames, d.Member.ConsumerName)
		p.EnvelopeSha256s = append(p.EnvelopeSha256s, d.EnvelopeDigest.Value)
		p.Bodies = append(p.Bodies, string(body))
	}
	if len(p.EventIds) == 0 {
		return out
	}
	inserted, err := queries.ReceiptInsertBatch(ctx, c.pool, p)
	if err != nil {
		return failPending(out, built, transport.Retryable("consumer_db", err))
	}
	isNew := make(map[string]bool, len(inserted))
	for _, id := range inserted {
		isNew[id] = true
	}
	var before []string
	for i, d := range ds {
		switch {
		case built[i] == nil:
		case isNew[d.EventID]:
			ack, err := receipt.AckFor(built[i])
			if err != nil {
				out[i].Err = transport.NonRetryable("ack_build", err)
				continue
			}
			out[i].Result = transport.Result{Ack: ack, ReceiptBody: bodies[i]}
		default:
			before = append(before, d.EventID)
		}
	}
	if len(before) == 0 {
		return out
	}
	// Applied before: compare and answer with the stored receipts.
	rows, err := queries.ReceiptLookupMany(ctx, c.pool, before)
	if err != nil {
		for i, d := range ds {
			if built[i] != nil && !isNew[d.EventID] {
				out[i].Err = transport.Retryable("consumer_db", err)
			}
		}
		return out
	}
	stored := make(map[string]dbsqlc.ReceiptLookupManyRow, len(rows))
	for _, r := range rows {
		stored[r.EventID] = r
	}
	for i, d := range ds {
		if built[i] == nil || isNew[d.EventID] {
			continue
		}
		out[i].Result, out[i].Err = replay(d, stored[d.EventID])
	}
	return out
}

// replay answers a redelivery of an applied event with its stored receipt.
func replay(d transport.Delivery, stored dbsqlc.ReceiptLookupManyRow) (transport.Result, error) {
	if stored.EventID == "" {
		return transport.Result{}, transport.Retryable("consumer_db", errReceiptVanished)
	}
	if stored.EnvelopeSha256 != d.EnvelopeDigest.Value {
		return transport.Result{}, transport.NonRetryable("digest_conflict", errDigestConflict)
	}
	decoded, err := receipt.DecodeOperationsProjectionAppliedReceipt([]byte(stored.Body))
	if err != nil {
		return transport.Result{}, transport.NonRetryable("receipt_decode", err)
	}
	ack, err := receipt.AckFor(decoded)
	if err != nil {
		return transport.Result{}, transport.NonRetryable("ack_build", err)
	}
	return transport.Result{Ack: ack, ReceiptBody: []byte(stored.Body)}, nil
}

// errReceiptVanished is an insert that found a receipt the lookup then
// could not read (receipts are never deleted: an invariant is broken).
var errReceiptVanished = errors.New("bench consumer: receipt applied before but not found")

// failPending fails every delivery whose receipt was built with err.
func failPending(out []transport.Answer, built []*receipt.OperationsProjectionAppliedReceipt, err error) []transport.Answer {
	for i := range out {
		if built[i] != nil {
			out[i].Err = err
		}
	}
	return out
}

func (c *receiptConsumer) count(ctx context.Context) (int, error) {
	n, err := queries.ReceiptCount(ctx, c.pool)
	if err != nil {
		return 0, fmt.Errorf("count receipts: %w", err)
	}
	return int(n), nil
}

// createConsumerSchema creates the consumer's table in its fresh database.
func createConsumerSchema(ctx context.Context, dsn string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("consumer database: %w", err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }() // Terminate only: the server ends the session either way
	if _, err := conn.Exec(ctx, consumerSchemaSQL); err != nil {
		return fmt.Errorf("consumer schema: %w", err)
	}
	return nil
}
