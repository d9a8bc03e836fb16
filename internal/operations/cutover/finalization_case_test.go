package cutover

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/operations/operationstest"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/release"
)

// caseOrderings are sample fences and two orderings of their case events:
// the adversarial ones ADR-031 names (Resolution → Request; C2 Request →
// C1 Resolution → C1 Request; a longer pending chain) and the natural one.
type caseOrdering struct {
	adversarial, natural []*envelope.Envelope
}

func caseOrderings(t *testing.T, b *bundle) []caseOrdering {
	t.Helper()
	fence := func(n, gens int) *operationstest.CaseFence {
		f, err := operationstest.NewCaseFence(t.Context(), b.pool, n, gens)
		require.NoError(t, err)
		return f
	}
	f1, f2, f3 := fence(61, 1), fence(62, 2), fence(63, 3)
	return []caseOrdering{
		{adversarial: []*envelope.Envelope{f1.Resolved(1), f1.Requested(1)},
			natural: []*envelope.Envelope{f1.Requested(1), f1.Resolved(1)}},
		{adversarial: []*envelope.Envelope{f2.Requested(2), f2.Resolved(1), f2.Requested(1)},
			natural: []*envelope.Envelope{f2.Requested(1), f2.Resolved(1), f2.Requested(2)}},
		{adversarial: []*envelope.Envelope{f3.Requested(3), f3.Requested(2), f3.Resolved(2), f3.Requested(1), f3.Resolved(1)},
			natural: []*envelope.Envelope{f3.Requested(1), f3.Resolved(1), f3.Requested(2), f3.Resolved(2), f3.Requested(3)}},
	}
}

// appendEach appends each event to the core outbox in its own
// transaction, as Billing does: the shadow feed replays the source in this
// (append) order.
func appendEach(ctx context.Context, pool Pool, es []*envelope.Envelope) error {
	for _, e := range es {
		if err := db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
			_, err := release.ForProducer(boundary.Core).AppendTx(ctx, tx, *e)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// OP-1, DS-8 (ADR-031 "在线消费和Shadow Rebuild…必须得到同一结果"): the case
// events of each ordering, appended to the outbox in one order and consumed
// online (version 1) in the other, give the shadow rebuild of version 2
// (the source replayed in append order) exactly the online fingerprint —
// both ways round. A shadow without the two case reads leaves every case
// event waiting and the cutover refuses; with them it is ready and cuts
// over.
func TestOP1ShadowRebuildOfCaseOrderingsEqualsOnline(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, 16), t.Context()
	reads := operationstest.Found()
	online, err := projector.New(b.pool, reads.Wire(projector.Config{Versions: []int64{1}}))
	require.NoError(t, err)

	orderings := caseOrderings(t, b)
	var events int
	for i, o := range orderings {
		appended, consumed := o.adversarial, o.natural
		if i%2 == 1 { // both ways round
			appended, consumed = o.natural, o.adversarial
		}
		require.NoError(t, appendEach(ctx, b.pool, appended))
		for _, e := range consumed {
			_, err := online.Consume(ctx, operationstest.DeliveryV1(e))
			require.NoError(t, err, "%s %s", e.EventType, e.EventID)
		}
		events += len(consumed)
	}
	active := b.print(t, 1)
	require.EqualValues(t, events, active.Receipts)
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM (SELECT 1 FROM operations.finalization_cases WHERE state = 'open'
		GROUP BY billing_finalization_fence_id, projection_version HAVING count(*) > 1) x`))

	// Without the case reads the shadow leaves the case events waiting
	// (owner_read_unavailable) and cannot be proved ready.
	unwired := b.cfg
	unwired.Projector = projector.Config{BillingReads: reads}
	res, err := Shadow(ctx, b.pool, unwired, 2, false, 0)
	require.NoError(t, err)
	require.EqualValues(t, events, res.Feed.Waiting)
	_, err = Cutover(ctx, b.pool, unwired, 2, Hooks{})
	require.ErrorIs(t, err, ErrNotReady)

	wired := b.cfg
	wired.Projector = reads.Wire(projector.Config{})
	res, err = Shadow(ctx, b.pool, wired, 2, false, 0)
	require.NoError(t, err)
	require.Zero(t, res.Feed.Waiting)
	require.Equal(t, active.SHA256, res.Fingerprint.SHA256, "shadow rebuild = online, whatever the ordering")
	require.Equal(t, active.Receipts, res.Fingerprint.Receipts)

	cut, err := Cutover(ctx, b.pool, wired, 2, Hooks{})
	require.NoError(t, err)
	require.EqualValues(t, 2, cut.ProjectionVersion)
	require.Equal(t, active.SHA256, b.print(t, 2).SHA256)
}
