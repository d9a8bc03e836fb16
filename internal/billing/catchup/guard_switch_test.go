package catchup_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/internal/billing/catchup"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox/transport"
)

// otherSnapshotEvent is d's input event at state version v carrying another
// snapshot under another event id: Metering writing the revision twice.
func otherSnapshotEvent(t *testing.T, d billingc.SettlementDimension, v int64) *envelope.Envelope {
	t.Helper()
	e := inputEvent(d, v)
	p, err := envelope.PayloadOf[envelope.MeteringSettlementInputCurrentChangedV1Payload](e)
	require.NoError(t, err)
	p.SetSettlementInputSnapshot(cquad("sis-other"))
	changed := *e
	changed.EventID, changed.Payload = cid("other-snapshot-event", d.SettlementDimensionID(), v), p.Map()
	built, err := envelope.Build(changed)
	require.NoError(t, err)
	return built
}

// TestGuardGoEvaluatedSameVersionOtherSnapshot (BI-3): after the
// finalization settled input v1 (the catch-up fence's last evaluated input)
// and before any event advanced the watermark, an event of v1 with another
// snapshot passes the watermark (none yet) and is refused by the fence: the
// same state version was evaluated as another snapshot. Non-retryable,
// nothing written. Clause: BI-3.evaluated-same-version-other-snapshot.
func TestGuardGoEvaluatedSameVersionOtherSnapshot(t *testing.T) {
	t.Parallel()
	b := setupCatchUp(t)
	d := catchUpDimension(1)
	b.finalize(t, "100", d)
	before, err := b.state(t.Context())
	require.NoError(t, err)

	_, err = b.consumer.Consume(t.Context(), catchUpDelivery(otherSnapshotEvent(t, d, 1)))
	retryable, code := transport.RetryableAndCode(err)
	require.False(t, retryable, "%v", err)
	require.Equal(t, catchup.CodeSameRevisionDiff, code, "%v", err) // BI-3.evaluated-same-version-other-snapshot
	require.ErrorContains(t, err, "was evaluated as")
	after, err := b.state(t.Context())
	require.NoError(t, err)
	require.Equal(t, before, after)

	// The control: the settled input's own event binds the fence.
	r := b.ack(t, inputEvent(d, 1))
	require.NotNil(t, r.Outcome.Durability.SettlementCatchUp)
}

// TestGuardGoFinalizationWatermarkOtherSnapshot (BI-3): an event advanced
// the dimension's watermark to v1 before the finalization; a finalization
// that settled v1 as another snapshot cannot open the catch-up fence over
// that watermark (ErrConflict), and nothing is written. Clause:
// BI-3.finalization-watermark-other-snapshot.
func TestGuardGoFinalizationWatermarkOtherSnapshot(t *testing.T) {
	t.Parallel()
	b := setupCatchUp(t)
	d := catchUpDimension(1)
	b.finalization.set(d.BillingReservationID, catchup.FinalizationInputWorkScheduled)
	b.ack(t, otherSnapshotEvent(t, d, 1))
	before, err := b.state(t.Context())
	require.NoError(t, err)

	open := func(settled billingc.SettlementInput) error {
		p := catchup.OpenParams{Tenant: catchUpTenant, CorrelationID: cid("correlation", d.BillingReservationID),
			FinalizationCommitted: cquad("bfc-" + d.BillingReservationID), FinalizationEventID: cid("finalization-event", d.BillingReservationID),
			Now:        catchUpAt.Add(30 * time.Minute),
			Dimensions: []catchup.OpenDimension{{Dimension: d, SettledInput: settled, SettledAmount: "100"}}}
		return db.WithTx(t.Context(), b.pool, func(ctx context.Context, tx pgx.Tx) error {
			return openAsFinalization(ctx, tx, p)
		})
	}
	err = open(settlementInputOf(d, 1))
	require.True(t, errors.Is(err, catchup.ErrConflict), "%v", err) // BI-3.finalization-watermark-other-snapshot
	require.ErrorContains(t, err, "in the watermark")
	after, err := b.state(t.Context())
	require.NoError(t, err)
	require.Equal(t, before, after)

	// The control: the watermark's own snapshot opens the fence.
	require.NoError(t, open(billingc.SettlementInput{Snapshot: cquad("sis-other"), StateVersion: 1}))
}
