package dispatcher_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/envelope/envelopetest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/release"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

const projectionName = "operations"

// bundle is one test's producer database (core), the consumer's own database
// (execution, standing in for any consumer-owned store) and a store.
type bundle struct {
	producerDSN string
	producer    *pgxpool.Pool
	consumer    *receiptConsumer
	store       *dispatcher.Store
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []migrate.Boundary{migrate.Core, migrate.Execution}, MaxConns: 8})
	ctx := context.Background()
	_, err := release.Bootstrap(ctx, b.Core(), release.BootstrapParams{
		ProjectionName: projectionName, ProjectionVersion: 1, SourceRelease: "dispatcher-test",
	})
	require.NoError(t, err)
	c := newReceiptConsumer(t, b.Execution())
	return &bundle{producerDSN: b.DSNs[migrate.Core], producer: b.Core(), consumer: c, store: dispatcher.NewStore(b.Core(), 5*time.Second)}
}

// appendRuns appends n run.created@2.0 events (one core_operations delivery
// each) in one transaction and returns their ids.
func (b *bundle) appendRuns(t testing.TB, n int) []string {
	t.Helper()
	events := make([]envelope.Envelope, n)
	ids := make([]string, n)
	for i := range events {
		events[i] = envelopetest.Envelope("run.created@2.0", 0)
		events[i].EventID = outbox.NewEventID()
		events[i].AggregateID = uuid.NewString()
		events[i].Payload["runId"] = events[i].AggregateID
		ids[i] = events[i].EventID
	}
	_, err := db.WithTxV(context.Background(), b.producer, func(ctx context.Context, tx pgx.Tx) (outbox.AppendResult, error) {
		return release.AppendTx(ctx, tx, events...)
	})
	require.NoError(t, err)
	return ids
}

// claim claims up to n deliveries with the given lease.
func (b *bundle) claim(t *testing.T, owner string, n int, lease time.Duration) []dispatcher.Claimed {
	t.Helper()
	c, err := b.store.Claim(context.Background(), dispatcher.ClaimParams{Owner: owner, Limit: n, Lease: lease})
	require.NoError(t, err)
	return c
}

// expireLease moves a held lease into the past in database time, which is
// what the lease check reads: no sleeping for a lease to run out.
func (b *bundle) expireLease(t *testing.T, eventID string) {
	t.Helper()
	_, err := b.producer.Exec(context.Background(),
		`UPDATE outbox.outbox_deliveries SET lease_expires_at = clock_timestamp() - interval '1 second'
		 WHERE event_id = $1 AND status = 'leased'`, eventID)
	require.NoError(t, err)
}

// waitLeaseExpired waits until the delivery's lease is over in database time.
func (b *bundle) waitLeaseExpired(t *testing.T, eventID string) {
	t.Helper()
	waitFor(t, 10*time.Second, "lease expiry", func() bool {
		var over bool
		_ = b.producer.QueryRow(context.Background(),
			`SELECT lease_expires_at <= clock_timestamp() FROM outbox.outbox_deliveries WHERE event_id = $1`, eventID).Scan(&over)
		return over
	})
}

type deliveryRow struct {
	Status       string
	AttemptCount int
	LastError    *string
	AckRef       *string
	Published    bool
}

func (b *bundle) delivery(t *testing.T, eventID string) deliveryRow {
	t.Helper()
	var r deliveryRow
	require.NoError(t, b.producer.QueryRow(context.Background(), `
		SELECT d.status, d.attempt_count, d.last_error_code, d.ack_receipt_key, e.published_at IS NOT NULL
		FROM outbox.outbox_deliveries d JOIN outbox.outbox_events e USING (event_id)
		WHERE d.event_id = $1`, eventID).Scan(&r.Status, &r.AttemptCount, &r.LastError, &r.AckRef, &r.Published))
	return r
}

// finishes lists the finish outcomes of an event's attempts in start order
// ("" for a start without finish).
func (b *bundle) finishes(t *testing.T, eventID string) []string {
	t.Helper()
	rows, err := b.producer.Query(context.Background(), `
		SELECT COALESCE(f.outcome, '') FROM outbox.outbox_delivery_attempt_starts s
		LEFT JOIN outbox.outbox_delivery_attempt_finishes f USING (attempt_id)
		WHERE s.event_id = $1 ORDER BY s.started_at, s.attempt_id`, eventID)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// invariants checks, by SQL over the whole database, what must hold at any
// quiescent point: at most one finish per start (the schema guarantees it;
// this proves it), every acknowledged delivery has exactly one acknowledged
// finish, published_at is set exactly for events whose mandatory deliveries
// are all acknowledged.
func (b *bundle) invariants(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	var multi, ackMismatch, pubWrong int
	require.NoError(t, b.producer.QueryRow(ctx, `
		SELECT count(*) FROM (SELECT attempt_id FROM outbox.outbox_delivery_attempt_finishes GROUP BY attempt_id HAVING count(*) > 1) x`).Scan(&multi))
	require.NoError(t, b.producer.QueryRow(ctx, `
		SELECT count(*) FROM outbox.outbox_deliveries d
		WHERE (d.status = 'acknowledged') <> (
		  SELECT count(*) = 1 FROM outbox.outbox_delivery_attempt_starts s
		  JOIN outbox.outbox_delivery_attempt_finishes f USING (attempt_id)
		  WHERE s.event_id = d.event_id AND s.destination = d.destination AND f.outcome = 'acknowledged')`).Scan(&ackMismatch))
	require.NoError(t, b.producer.QueryRow(ctx, `
		SELECT count(*) FROM outbox.outbox_events e
		WHERE (e.published_at IS NOT NULL) <> NOT EXISTS (
		  SELECT 1 FROM outbox.outbox_deliveries d WHERE d.event_id = e.event_id AND d.mandatory AND d.status <> 'acknowledged')`).Scan(&pubWrong))
	require.Zero(t, multi, "a start with more than one finish")
	require.Zero(t, ackMismatch, "acknowledged deliveries must have exactly one acknowledged finish")
	require.Zero(t, pubWrong, "published_at must be set exactly for fully acknowledged events")
}

// waitFor polls a database condition until it holds or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// receiptConsumer is a real consumer: it applies each event at most once in
// its own database and writes an OperationsProjectionAppliedReceipt@1 in the
// same transaction; a redelivery returns the stored receipt byte for byte.
type receiptConsumer struct {
	pool    *pgxpool.Pool
	calls   atomic.Int64
	failing atomic.Pointer[error] // when set, Deliver returns this error
	// shadowVersion, when non-zero, makes receipts claim another projection version.
	shadowVersion atomic.Int64
}

func newReceiptConsumer(t *testing.T, pool *pgxpool.Pool) *receiptConsumer {
	t.Helper()
	_, err := pool.Exec(context.Background(), `
		CREATE SCHEMA consumer_test;
		CREATE TABLE consumer_test.receipts (
		  event_id uuid PRIMARY KEY,
		  envelope_sha256 text NOT NULL,
		  body text NOT NULL,
		  applied_at timestamptz NOT NULL DEFAULT now());
		CREATE TABLE consumer_test.effects (event_id uuid PRIMARY KEY REFERENCES consumer_test.receipts)`)
	require.NoError(t, err)
	return &receiptConsumer{pool: pool}
}

var errDigestConflict = errors.New("same event id, different envelope digest")

func (c *receiptConsumer) Deliver(ctx context.Context, d transport.Delivery) (transport.Result, error) {
	c.calls.Add(1)
	if e := c.failing.Load(); e != nil {
		return transport.Result{}, *e
	}
	return db.WithTxV(ctx, c.pool, func(ctx context.Context, tx pgx.Tx) (transport.Result, error) {
		var storedSHA, body string
		err := tx.QueryRow(ctx, `SELECT envelope_sha256, body FROM consumer_test.receipts WHERE event_id = $1 FOR UPDATE`, d.EventID).Scan(&storedSHA, &body)
		switch {
		case err == nil:
			if storedSHA != d.EnvelopeDigest.Value {
				return transport.Result{}, transport.NonRetryable("digest_conflict", errDigestConflict)
			}
			return resultOf([]byte(body))
		case !errors.Is(err, pgx.ErrNoRows):
			return transport.Result{}, transport.Retryable("consumer_db", err)
		}
		target := d.Member.ProjectionTarget
		if v := c.shadowVersion.Load(); v != 0 {
			target = route.Required(target.Name, v)
		}
		r, err := receipt.NewOperationsProjectionAppliedReceipt(uuid.NewString(), target, receipt.EventFacts{
			EventID: d.EventID, EventType: d.EventType, EventSchemaVersion: d.EventSchemaVersion, EnvelopeDigest: d.EnvelopeDigest,
		}, time.Now())
		if err != nil {
			return transport.Result{}, transport.NonRetryable("receipt_build", err)
		}
		raw, err := jcs.Marshal(r.ToJSON())
		if err != nil {
			return transport.Result{}, transport.NonRetryable("receipt_encode", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO consumer_test.receipts (event_id, envelope_sha256, body) VALUES ($1, $2, $3)`,
			d.EventID, d.EnvelopeDigest.Value, string(raw)); err != nil {
			return transport.Result{}, transport.Retryable("consumer_db", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO consumer_test.effects (event_id) VALUES ($1)`, d.EventID); err != nil {
			return transport.Result{}, transport.Retryable("consumer_db", err)
		}
		return resultOf(raw)
	})
}

func marshal(v any) ([]byte, error) { return jcs.Marshal(v) }

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

// effects counts applied effects per event in the consumer's database.
func (c *receiptConsumer) effects(t *testing.T) (total, distinct int) {
	t.Helper()
	require.NoError(t, c.pool.QueryRow(context.Background(),
		`SELECT count(*), count(DISTINCT event_id) FROM consumer_test.effects`).Scan(&total, &distinct))
	return total, distinct
}

func (c *receiptConsumer) receiptBody(t *testing.T, eventID string) string {
	t.Helper()
	var body string
	require.NoError(t, c.pool.QueryRow(context.Background(),
		`SELECT body FROM consumer_test.receipts WHERE event_id = $1`, eventID).Scan(&body))
	return body
}

func (c *receiptConsumer) transport() transport.Transport {
	return transport.NewInProcess(map[route.Destination]transport.ConsumerFunc{route.CoreOperations: c.Deliver})
}
