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
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/envelope/sample"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/outbox/outboxtest"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/release"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

const projectionName = "operations"

// bundle is one test's producer database (core), the consumer's own database
// (execution, standing in for any consumer-owned store) and a store.
type bundle struct {
	ctx         context.Context // the test's context (t.Context())
	producerDSN string
	producer    *pgxpool.Pool
	consumer    *outboxtest.Consumer
	store       *dispatcher.Store
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core, boundary.Execution}, MaxConns: 8})
	ctx := t.Context()
	_, err := release.Bootstrap(ctx, b.Core(), release.BootstrapParams{
		ProjectionName: projectionName, ProjectionVersion: 1, SourceRelease: "dispatcher-test",
	})
	require.NoError(t, err)
	c := outboxtest.NewConsumer(t, b.Execution())
	return &bundle{ctx: ctx, producerDSN: b.DSNs[boundary.Core], producer: b.Core(), consumer: c, store: dispatcher.NewStore(b.Core(), 5*time.Second)}
}

// appendRuns appends n run.created@2.0 events (one core_operations delivery
// each) in one transaction and returns their ids.
func (b *bundle) appendRuns(t testing.TB, n int) []string {
	t.Helper()
	events := make([]envelope.Envelope, n)
	ids := make([]string, n)
	for i := range events {
		events[i] = sample.Envelope("run.created@2.0", 0)
		events[i].EventID = outbox.NewEventID()
		events[i].AggregateID = uuid.NewString()
		events[i].Payload["runId"] = events[i].AggregateID
		ids[i] = events[i].EventID
	}
	_, err := db.WithTxV(t.Context(), b.producer, func(ctx context.Context, tx pgx.Tx) (outbox.AppendResult, error) {
		return release.AppendTx(ctx, tx, events...)
	})
	require.NoError(t, err)
	return ids
}

// claim claims up to n deliveries with the given lease.
func (b *bundle) claim(t *testing.T, owner string, n int, lease time.Duration) []dispatcher.Claimed {
	t.Helper()
	c, err := b.store.Claim(t.Context(), dispatcher.ClaimParams{Owner: owner, Limit: n, Lease: lease})
	require.NoError(t, err)
	return c
}

// expireLease moves a held lease into the past in database time, which is
// what the lease check reads: no sleeping for a lease to run out.
func (b *bundle) expireLease(t *testing.T, eventID string) {
	t.Helper()
	_, err := b.producer.Exec(t.Context(),
		`UPDATE outbox.outbox_deliveries SET lease_expires_at = clock_timestamp() - interval '1 second'
		 WHERE event_id = $1 AND status = 'leased'`, eventID)
	require.NoError(t, err)
}

// loseLeases makes two held leases fail their fences in the two ways a
// batch must tell apart from its neighbours: stale is recovered and claimed
// again by another worker (its token is no longer the row's; the new
// holder's claim is returned), expired keeps its token but its lease ran
// out.
func (b *bundle) loseLeases(t *testing.T, stale, expired dispatcher.Claimed) dispatcher.Claimed {
	t.Helper()
	b.expireLease(t, stale.EventID)
	recovered, err := b.store.RecoverExpired(t.Context(), nil, 10)
	require.NoError(t, err)
	require.Equal(t, 1, recovered["core_operations"])
	fresh := b.claim(t, "another-worker", 5, lease)
	require.Len(t, fresh, 1)
	require.Equal(t, stale.EventID, fresh[0].EventID)
	b.expireLease(t, expired.EventID)
	return fresh[0]
}

// waitLeaseExpired waits until the delivery's lease is over in database time.
func (b *bundle) waitLeaseExpired(t *testing.T, eventID string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var over bool
		require.NoError(c, b.producer.QueryRow(t.Context(),
			`SELECT lease_expires_at <= clock_timestamp() FROM outbox.outbox_deliveries WHERE event_id = $1`, eventID).Scan(&over))
		require.True(c, over, "lease not expired yet")
	}, 10*time.Second, pollTick, "lease expiry")
}

type deliveryRow struct {
	Status       string
	AttemptCount int
	LastError    *string
	AckRef       *string
	Published    bool
}

func (b *bundle) delivery(t tb, eventID string) deliveryRow {
	t.Helper()
	var r deliveryRow
	require.NoError(t, b.producer.QueryRow(b.ctx, `
		SELECT d.status, d.attempt_count, d.last_error_code, d.ack_receipt_key, e.published_at IS NOT NULL
		FROM outbox.outbox_deliveries d JOIN outbox.outbox_events e USING (event_id)
		WHERE d.event_id = $1`, eventID).Scan(&r.Status, &r.AttemptCount, &r.LastError, &r.AckRef, &r.Published))
	return r
}

// finishes lists the finish outcomes of an event's attempts in start order
// ("" for a start without finish).
func (b *bundle) finishes(t *testing.T, eventID string) []string {
	t.Helper()
	rows, err := b.producer.Query(t.Context(), `
		SELECT COALESCE(f.outcome, '') FROM outbox.outbox_delivery_attempt_starts s
		LEFT JOIN outbox.outbox_delivery_attempt_finishes f USING (attempt_id)
		WHERE s.event_id = $1 ORDER BY s.started_at, s.attempt_id`, eventID)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// untouched asserts that each event's delivery is still leased by its one
// open attempt: a refused write changed nothing.
func (b *bundle) untouched(t *testing.T, eventIDs ...string) {
	t.Helper()
	for _, id := range eventIDs {
		require.Equal(t, "leased", b.delivery(t, id).Status, "event %s", id)
		require.Equal(t, []string{""}, b.finishes(t, id), "event %s: one attempt, no finish", id)
	}
}

// invariants proves, by SQL over the whole producer database, what must
// hold at any quiescent point (outboxtest.RequireInvariants: at most one
// finish per start, an acknowledged delivery has exactly one acknowledged
// finish, published_at exact, …).
func (b *bundle) invariants(t *testing.T) {
	t.Helper()
	outboxtest.RequireInvariants(t, b.producer)
}

// pollTick is how often a wait re-reads the database condition it waits on.
const pollTick = 5 * time.Millisecond

// tb is what the fixture's readers need: a test, or the collector of a
// require.EventuallyWithT condition (so a failed read retries, then reports).
type tb interface {
	require.TestingT
	Helper()
}

// verifiedAcks delivers every claim to the bundle's consumer and verifies
// its answer.
func (b *bundle) verifiedAcks(t *testing.T, claims []dispatcher.Claimed) []dispatcher.VerifiedAck {
	t.Helper()
	acks := make([]dispatcher.VerifiedAck, len(claims))
	for i, c := range claims {
		res, err := b.consumer.Deliver(t.Context(), c.Delivery())
		require.NoError(t, err)
		acks[i], err = dispatcher.VerifyResult(c, res)
		require.NoError(t, err)
	}
	return acks
}

// acknowledgedOnFirstAttempt checks that each delivery was acknowledged by
// its first and only attempt.
func (b *bundle) acknowledgedOnFirstAttempt(t *testing.T, eventIDs ...string) {
	t.Helper()
	for _, id := range eventIDs {
		require.Equal(t, 1, b.delivery(t, id).AttemptCount, "delivered on the first attempt")
		require.Equal(t, []string{"acknowledged"}, b.finishes(t, id))
	}
}

// holdingFirstCall is the test consumer on core_operations, whose first call
// waits hold (or until cancelled) before it applies; seen, when set, sees
// every call first.
func (b *bundle) holdingFirstCall(hold time.Duration, seen func(transport.Delivery)) transport.Transport {
	var first atomic.Bool
	return single(func(ctx context.Context, d transport.Delivery) (transport.Result, error) {
		if seen != nil {
			seen(d)
		}
		if first.CompareAndSwap(false, true) {
			select {
			case <-ctx.Done():
				return transport.Result{}, ctx.Err()
			case <-time.After(hold):
			}
		}
		return b.consumer.Deliver(ctx, d)
	})
}

// refuseRenewals makes every renewal of a queued delivery fail as a
// statement would for a reason other than its fence, and counts them.
func refuseRenewals(d *dispatcher.Dispatcher) *atomic.Int32 {
	var refused atomic.Int32
	d.SetHooks(dispatcher.Hooks{BeforeRenew: func([]dispatcher.Fence) error {
		refused.Add(1)
		return errors.New("injected: renewal statement timed out")
	}})
	return &refused
}
