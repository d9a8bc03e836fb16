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
	"github.com/oceanway/core/internal/outbox/transport"
)

var (
	//go:embed sql/consumer_schema.sql
	consumerSchemaSQL string
	//go:embed sql/receipt_insert.sql
	receiptInsertSQL string
	//go:embed sql/receipt_lookup.sql
	receiptLookupSQL string
	//go:embed sql/receipt_count.sql
	receiptCountSQL string
)

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
	tag, err := c.pool.Exec(ctx, receiptInsertSQL, d.EventID, d.Member.ConsumerName, d.EnvelopeDigest.Value, string(body))
	if err != nil {
		return transport.Result{}, transport.Retryable("consumer_db", err)
	}
	if tag.RowsAffected() == 1 {
		ack, err := receipt.AckFor(r)
		if err != nil {
			return transport.Result{}, transport.NonRetryable("ack_build", err)
		}
		return transport.Result{Ack: ack, ReceiptBody: body}, nil
	}
	// Applied before: compare and answer with the stored receipt.
	var storedSHA, storedBody string
	if err := c.pool.QueryRow(ctx, receiptLookupSQL, d.EventID).Scan(&storedSHA, &storedBody); err != nil {
		return transport.Result{}, transport.Retryable("consumer_db", err)
	}
	if storedSHA != d.EnvelopeDigest.Value {
		return transport.Result{}, transport.NonRetryable("digest_conflict", errDigestConflict)
	}
	stored, err := receipt.DecodeOperationsProjectionAppliedReceipt([]byte(storedBody))
	if err != nil {
		return transport.Result{}, transport.NonRetryable("receipt_decode", err)
	}
	ack, err := receipt.AckFor(stored)
	if err != nil {
		return transport.Result{}, transport.NonRetryable("ack_build", err)
	}
	return transport.Result{Ack: ack, ReceiptBody: []byte(storedBody)}, nil
}

func (c *receiptConsumer) count(ctx context.Context) (int, error) {
	var n int
	if err := c.pool.QueryRow(ctx, receiptCountSQL).Scan(&n); err != nil {
		return 0, fmt.Errorf("count receipts: %w", err)
	}
	return n, nil
}

// createConsumerSchema creates the consumer's table in its fresh database.
func createConsumerSchema(ctx context.Context, dsn string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("consumer database: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, consumerSchemaSQL); err != nil {
		return fmt.Errorf("consumer schema: %w", err)
	}
	return nil
}
