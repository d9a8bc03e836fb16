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
	r, err := receipt.NewOperationsProjectionAppliedReceipt(uuid.NewString(), d.Member.ProjectionTarget, receipt.EventFacts{
		EventID: d.EventID, EventType: d.EventType, EventSchemaVersion: d.EventSchemaVersion, EnvelopeDigest: d.EnvelopeDigest,
	}, time.Now())
	if err != nil {
		return transport.Result{}, transport.NonRetryable("receipt_build", err)
	}
	body, err := jcs.Marshal(r.ToJSON())
	if err != nil {
		return transport.Result{}, transport.NonRetryable("receipt_encode", err)
	}
	inserted, err := queries.ReceiptInsert(ctx, c.pool, dbsqlc.ReceiptInsertParams{
		EventID: d.EventID, ConsumerName: d.Member.ConsumerName, EnvelopeSha256: d.EnvelopeDigest.Value, Body: string(body),
	})
	if err != nil {
		return transport.Result{}, transport.Retryable("consumer_db", err)
	}
	if inserted == 1 {
		ack, err := receipt.AckFor(r)
		if err != nil {
			return transport.Result{}, transport.NonRetryable("ack_build", err)
		}
		return transport.Result{Ack: ack, ReceiptBody: body}, nil
	}
	// Applied before: compare and answer with the stored receipt.
	stored, err := queries.ReceiptLookup(ctx, c.pool, d.EventID)
	if err != nil {
		return transport.Result{}, transport.Retryable("consumer_db", err)
	}
	storedSHA, storedBody := stored.EnvelopeSha256, stored.Body
	if storedSHA != d.EnvelopeDigest.Value {
		return transport.Result{}, transport.NonRetryable("digest_conflict", errDigestConflict)
	}
	decoded, err := receipt.DecodeOperationsProjectionAppliedReceipt([]byte(storedBody))
	if err != nil {
		return transport.Result{}, transport.NonRetryable("receipt_decode", err)
	}
	ack, err := receipt.AckFor(decoded)
	if err != nil {
		return transport.Result{}, transport.NonRetryable("ack_build", err)
	}
	return transport.Result{Ack: ack, ReceiptBody: []byte(storedBody)}, nil
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
