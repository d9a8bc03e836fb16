package billing_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/internal/billing"
)

func (b *bundle) settle(t *testing.T, in billing.SettlementInput) (billing.SettlementAdvance, error) {
	t.Helper()
	return tx(t, b.pool, func(ctx context.Context, tx pgx.Tx) (billing.SettlementAdvance, error) {
		return billing.ApplySettlementInputTx(ctx, tx, in)
	})
}

// BFC-6: an early settlement input — before its reservation's fence exists
// — is retryable (ErrFenceNotBindable) and writes nothing; before the
// closure is applied the watermark advances durably but no Work is
// scheduled (the event stays retryable, no receipt); once the closure is
// applied the same input schedules a new generation. The watermark is
// monotonic per dimension: a lower state version is already_observed, the
// same version with another snapshot conflicts, a finalized reservation is
// the catch-up's (ErrFinalized).
func TestBFC6SettlementWatermark(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := newRun(1)
	_, err := b.settle(t, r.settlement(1, 1, ""))
	require.ErrorIs(t, err, billing.ErrFenceNotBindable)
	var n int
	require.NoError(t, b.admin.QueryRow(t.Context(), "SELECT count(*) FROM billing.settlement_input_watermarks").Scan(&n))
	require.Zero(t, n)

	admit(t, b.admin, r)
	adv, err := b.settle(t, r.settlement(1, 2, ""))
	require.NoError(t, err)
	require.Equal(t, billing.SettlementWaitingForClosure, adv.Outcome)
	require.Nil(t, adv.Scheduled)
	f := b.fence(t, r.fenceID)
	require.EqualValues(t, 1, f.Revision, "no Work before the closure")

	_, err = b.deliver(t, r.closure(""))
	require.NoError(t, err)
	var body string
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT s.snapshot_body FROM billing.billing_finalization_works w
		JOIN billing.billing_finalization_trigger_snapshots s USING (trigger_snapshot_ref)
		WHERE w.billing_finalization_fence_id = $1 AND w.work_generation = 2`, r.fenceID).Scan(&body))
	require.Contains(t, body, `"settlementInputStateVersion":2`, "the closure's trigger freezes the watermark already advanced")

	// The retried early event now schedules.
	adv, err = b.settle(t, r.settlement(1, 2, ""))
	require.NoError(t, err)
	require.Equal(t, billing.SettlementWorkScheduled, adv.Outcome)
	require.EqualValues(t, 3, adv.Scheduled.Generation)
	require.EqualValues(t, b.fence(t, r.fenceID).Revision, adv.Scheduled.FenceRevision)
	state, _ := b.workState(t, r.fenceID, 2)
	require.Equal(t, billing.WorkSuperseded, state)

	adv, err = b.settle(t, r.settlement(1, 1, ""))
	require.NoError(t, err)
	require.Equal(t, billing.SettlementAlreadyObserved, adv.Outcome)
	require.EqualValues(t, 2, adv.HighestState)
	_, err = b.settle(t, r.settlement(1, 2, "-other"))
	require.ErrorIs(t, err, billing.ErrSettlementConflict)
	moved := r.settlement(1, 3, "")
	moved.ChargeDimensionKey = "tokens.elsewhere"
	_, err = b.settle(t, moved)
	require.ErrorIs(t, err, billing.ErrSettlementConflict)

	adv, err = b.settle(t, r.settlement(2, 1, ""))
	require.NoError(t, err)
	require.Equal(t, billing.SettlementWorkScheduled, adv.Outcome)
	require.EqualValues(t, 4, adv.Scheduled.Generation)

	_, err = b.commit(t, b.decision(t, r, billingc.SuccessSettleAndReleaseRemainder, "1", "2499"), billing.CommitOpts{})
	require.NoError(t, err)
	_, err = b.settle(t, r.settlement(1, 3, ""))
	require.ErrorIs(t, err, billing.ErrFinalized)
}
