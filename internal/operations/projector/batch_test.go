package projector_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/inbox/inboxtest"
	"github.com/oceanway/core/internal/operations/operationstest"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/outbox/transport"
)

// TestConformanceBatch runs the consumer conformance suite through the
// projector's batch entry point, and the batch cases (CON-1, CON-2,
// OB-DELIVER-6, OPS-2). The lock timeout leaves room for a batch that waits
// for another batch's receipt-key locks (a whole batch, not one event).
func TestConformanceBatch(t *testing.T) {
	t.Parallel()
	inboxtest.RunBatch(t, func(t *testing.T) inboxtest.Subject {
		b := setup(t, projector.Config{Inbox: inbox.Config{LockTimeout: 5 * time.Second}})
		s := subject(b)
		s.ConsumeBatch = b.p.ConsumeBatch
		return s
	})
}

func (b *bundle) batch(t *testing.T, es ...*envelope.Envelope) []transport.Answer {
	t.Helper()
	ds := make([]transport.Delivery, len(es))
	for i, e := range es {
		ds[i] = operationstest.DeliveryV1(e)
	}
	return b.p.ConsumeBatch(t.Context(), ds)
}

type buildSummary struct {
	Applied     int64   `db:"applied"`
	Waited      int64   `db:"waited"`
	LastEventID *string `db:"last_event_id"`
}

func (b *bundle) build(t *testing.T) buildSummary {
	t.Helper()
	s, err := operationstest.QueryOne(t.Context(), b.pool, pgx.RowToStructByName[buildSummary],
		`SELECT applied_count AS applied, waited_count AS waited, last_event_id::text AS last_event_id
		   FROM operations.projection_builds WHERE build_id = @build_id`, pgx.NamedArgs{"build_id": b.p.BuildID()})
	require.NoError(t, err)
	return s
}

// CON-1/CON-2: one event of a batch that fails inside the database — a
// lock timeout on its aggregate after it wrote, a revision conflict — rolls
// back to its savepoint alone: the other events of the batch commit with
// their receipts, the failed ones wrote nothing and converge when
// redelivered, and the build summary counts exactly the applied and waiting
// events, as one-by-one delivery does.
func TestCON1BatchEventFailureLeavesOthersApplied(t *testing.T) {
	t.Parallel()
	b := setup(t) // lock timeout 1s
	o1, o2, o3 := operationstest.Sample(1), operationstest.Sample(2), operationstest.Sample(3)
	b.ack(t, o1.Run)
	b.ack(t, o1.Wallet)

	// Another session holds o1's reservation aggregate: its finalization
	// waits past the lock timeout after the gate and the owner read.
	blocker, err := b.pool.Begin(t.Context())
	require.NoError(t, err)
	defer func() { _ = blocker.Rollback(context.WithoutCancel(t.Context())) }()
	_, err = blocker.Exec(t.Context(), `SELECT 1 FROM operations.projection_aggregates
		WHERE aggregate_type = $1 AND aggregate_id = $2 FOR UPDATE`, envelope.AggregateBillingReservation, o1.ReservationID)
	require.NoError(t, err)

	second := operationstest.Rebuild(o2.Wallet, func(e *envelope.Envelope) { e.EventID = operationstest.ID(2, 77) })
	answers := b.batch(t, o2.Run, o1.Finalization, o2.Wallet, second, o3.Finalization, o2.Finalization)
	require.Len(t, answers, 6)
	require.NoError(t, answers[0].Err)
	requireCode(t, answers[1].Err, true, inbox.CodeLockUnavailable)
	require.NoError(t, answers[2].Err)
	requireCode(t, answers[3].Err, false, projector.CodeRevisionConflict)
	requireCode(t, answers[4].Err, true, projector.CodeRevisionGapWait)
	require.NoError(t, answers[5].Err)
	for _, i := range []int{0, 2, 5} {
		require.NotNil(t, answers[i].Result.Ack)
		require.NotEmpty(t, answers[i].Result.ReceiptBody)
	}
	require.Equal(t, 2+3, b.count(t, "projected_events"), "o1 run and wallet, then o2's three events")
	require.Equal(t, 1, b.count(t, "revision_gaps"), "o3's finalization waits, its gap record committed with the batch")
	require.Equal(t, buildSummary{Applied: 2 + 3, Waited: 1, LastEventID: &o2.Finalization.EventID}, b.build(t))

	require.NoError(t, blocker.Rollback(t.Context()))
	b.ack(t, o1.Finalization)
	b.ack(t, o3.Run)
	b.ack(t, o3.Wallet)
	b.ack(t, o3.Finalization)

	inOrder := setup(t)
	for _, o := range []operationstest.Operation{o1, o2, o3} {
		for _, e := range o.Events() {
			inOrder.ack(t, e)
		}
	}
	require.Equal(t, inOrder.state(t), b.state(t))
}

// CON-1/OB-DELIVER-6: two batches of the same events in opposite orders,
// both held at one receipt-key lock another session holds (so both are
// inside their transactions at once, deterministically), do not deadlock
// when it is released: the receipt-key locks are taken in key order, so
// the second batch waits for the first one's commit and then replays every
// receipt byte for byte; each event is applied once. Taken in delivery
// order instead, the two batches would hold each other's keys and one
// would fail with a deadlock.
func TestCON1OverlappingBatchesDoNotDeadlock(t *testing.T) {
	t.Parallel()
	b := setup(t, projector.Config{Inbox: inbox.Config{LockTimeout: 30 * time.Second}})
	var forward []*envelope.Envelope
	for _, n := range []int{1, 2, 3} {
		forward = append(forward, operationstest.Sample(n).Events()...)
	}
	reverse := make([]*envelope.Envelope, len(forward))
	for i, e := range forward {
		reverse[len(forward)-1-i] = e
	}
	middle := forward[len(forward)/2]

	blocker, err := b.pool.Begin(t.Context())
	require.NoError(t, err)
	defer func() { _ = blocker.Rollback(context.WithoutCancel(t.Context())) }()
	// The receipt key's advisory lock exactly as the inbox takes it.
	key := fmt.Sprintf("inbox|%s|%s|%d|%s", route.OperationsProjector, projector.ProjectionName, 1, middle.EventID)
	_, err = blocker.Exec(t.Context(), `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, key)
	require.NoError(t, err)

	orders := [][]*envelope.Envelope{forward, reverse}
	answers := make([][]transport.Answer, len(orders))
	var wg sync.WaitGroup
	for k, order := range orders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[k] = b.batch(t, order...)
		}()
	}
	// Both batches wait on advisory locks: one on the blocker, the other on
	// the first (or on the blocker too).
	require.Eventually(t, func() bool {
		n, err := operationstest.QueryOne(t.Context(), b.pool, pgx.RowTo[int64], `SELECT count(*) FROM pg_locks
			WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`, nil)
		return err == nil && n == 2
	}, 20*time.Second, 5*time.Millisecond)
	require.NoError(t, blocker.Rollback(t.Context()))
	wg.Wait()

	bodies := map[string][]byte{}
	for k, order := range orders {
		require.Len(t, answers[k], len(order))
		for i, a := range answers[k] {
			e := order[i]
			if a.Err != nil {
				// Only the reverse batch, if it ran first, sees an event
				// ahead of its aggregate's previous revision.
				require.True(t, transport.IsRecoverableWait(a.Err), "batch %d, %s %s: %v", k, e.EventType, e.EventID, a.Err)
				continue
			}
			if first, ok := bodies[e.EventID]; ok {
				require.Equal(t, first, a.Result.ReceiptBody, "event %s applied twice", e.EventID)
			}
			bodies[e.EventID] = a.Result.ReceiptBody
		}
	}
	for _, e := range forward {
		if _, ok := bodies[e.EventID]; !ok {
			b.ack(t, e)
		}
	}
	inOrder := setup(t)
	for _, e := range forward {
		inOrder.ack(t, e)
	}
	require.Equal(t, inOrder.state(t), b.state(t))
	require.Equal(t, int64(len(forward)), b.build(t).Applied, "every event applied once")
}
