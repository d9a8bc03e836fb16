package outboxtest

import (
	"context"
	_ "embed"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox/outboxtest/dbsqlc"
	"github.com/oceanway/core/internal/outbox/transport"
)

//go:embed consumer_schema.sql
var consumerSchemaSQL string

// Ack is a transport.ConsumerFunc that acknowledges d with a real,
// verifiable ack and writes nothing: a fresh sealed
// OperationsProjectionAppliedReceipt@1 for the delivery's frozen projection
// and its ActiveConsumerAck@1. Benchmarks use it to measure the
// dispatcher's own cost; tests that drive the store by hand use it to ack.
func Ack(_ context.Context, d transport.Delivery) (transport.Result, error) {
	r, err := newReceipt(d, d.Member.ProjectionTarget)
	if err != nil {
		return transport.Result{}, err
	}
	body, err := jcs.Marshal(r.ToJSON())
	if err != nil {
		return transport.Result{}, transport.NonRetryable("receipt_encode", err)
	}
	ack, err := receipt.AckFor(r)
	if err != nil {
		return transport.Result{}, transport.NonRetryable("ack_build", err)
	}
	return transport.Result{Ack: ack, ReceiptBody: body}, nil
}

func newReceipt(d transport.Delivery, target route.ProjectionTarget) (*receipt.OperationsProjectionAppliedReceipt, error) {
	r, err := receipt.NewOperationsProjectionAppliedReceipt(uuid.NewString(), target, receipt.EventFacts{
		EventID: d.EventID, EventType: d.EventType, EventSchemaVersion: d.EventSchemaVersion, EnvelopeDigest: d.EnvelopeDigest,
	}, time.Now())
	if err != nil {
		return nil, transport.NonRetryable("receipt_build", err)
	}
	return r, nil
}

// Consumer is a real core_operations consumer over its own database: it
// applies each event at most once and stores its
// OperationsProjectionAppliedReceipt@1 in the same transaction; a
// redelivery returns the stored receipt byte for byte, the same event id
// with another envelope digest is a non-retryable conflict.
type Consumer struct {
	pool    *pgxpool.Pool
	queries *dbsqlc.Queries
	calls   atomic.Int64
	// projectionVersion, when non-zero, makes new receipts claim another
	// projection version than the frozen one.
	projectionVersion atomic.Int64
}

// NewConsumer creates the consumer's tables (schema outboxtest) in pool's
// fresh database.
func NewConsumer(t testing.TB, pool *pgxpool.Pool) *Consumer {
	t.Helper()
	_, err := pool.Exec(context.Background(), consumerSchemaSQL)
	require.NoError(t, err)
	return &Consumer{pool: pool, queries: dbsqlc.New()}
}

// ErrDigestConflict is a redelivery whose envelope digest differs from the
// applied one.
var ErrDigestConflict = errors.New("same event id, different envelope digest")

// Deliver is the consumer's transport.ConsumerFunc.
func (c *Consumer) Deliver(ctx context.Context, d transport.Delivery) (transport.Result, error) {
	c.calls.Add(1)
	return db.WithTxV(ctx, c.pool, func(ctx context.Context, tx pgx.Tx) (transport.Result, error) {
		stored, err := c.queries.ReceiptLookupForUpdate(ctx, tx, d.EventID)
		switch err = db.NotFound(err); {
		case err == nil:
			if stored.EnvelopeSha256 != d.EnvelopeDigest.Value {
				return transport.Result{}, transport.NonRetryable("digest_conflict", ErrDigestConflict)
			}
			return resultOf([]byte(stored.Body))
		case !errors.Is(err, db.ErrNotFound):
			return transport.Result{}, transport.Retryable("consumer_db", err)
		}
		target := d.Member.ProjectionTarget
		if v := c.projectionVersion.Load(); v != 0 {
			target = route.Required(target.Name, v)
		}
		r, err := newReceipt(d, target)
		if err != nil {
			return transport.Result{}, err
		}
		raw, err := jcs.Marshal(r.ToJSON())
		if err != nil {
			return transport.Result{}, transport.NonRetryable("receipt_encode", err)
		}
		if err := c.queries.ReceiptInsert(ctx, tx, dbsqlc.ReceiptInsertParams{
			EventID: d.EventID, EnvelopeSha256: d.EnvelopeDigest.Value, Body: string(raw),
		}); err != nil {
			return transport.Result{}, transport.Retryable("consumer_db", err)
		}
		if err := c.queries.EffectInsert(ctx, tx, d.EventID); err != nil {
			return transport.Result{}, transport.Retryable("consumer_db", err)
		}
		return resultOf(raw)
	})
}

// resultOf answers with a stored receipt body: decoded strictly, so the
// ack is built from exactly the bytes the dispatcher will verify.
func resultOf(body []byte) (transport.Result, error) {
	r, err := receipt.DecodeOperationsProjectionAppliedReceipt(body)
	if err != nil {
		return transport.Result{}, transport.NonRetryable("receipt_decode", err)
	}
	ack, err := receipt.AckFor(r)
	if err != nil {
		return transport.Result{}, transport.NonRetryable("ack_build", err)
	}
	return transport.Result{Ack: ack, ReceiptBody: body}, nil
}

// Transport delivers core_operations to the consumer in process.
func (c *Consumer) Transport() transport.Transport {
	return transport.NewInProcess(map[route.Destination]transport.ConsumerFunc{route.CoreOperations: c.Deliver})
}

// Calls is the number of deliveries the consumer has been handed.
func (c *Consumer) Calls() int64 { return c.calls.Load() }

// ClaimProjectionVersion makes the receipts of events applied from now on
// claim projection version v instead of the frozen one (0 restores it): a
// consumer running a shadow projection.
func (c *Consumer) ClaimProjectionVersion(v int64) { c.projectionVersion.Store(v) }

// Effects counts the applied effects and the distinct events they belong to.
func (c *Consumer) Effects(t testing.TB) (total, distinct int) {
	t.Helper()
	n, err := c.queries.EffectCounts(context.Background(), c.pool)
	require.NoError(t, err)
	return int(n.Total), int(n.DistinctEvents)
}
