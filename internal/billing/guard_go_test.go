package billing_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/internal/billing"
)

// TestGuardGoSettlementRunOfAnotherReservation (BFC-6): a settlement input
// that names a run of another reservation is ErrSettlementConflict, as the
// billing role, and writes no watermark: the watermark is keyed by the
// input's reservation, which no database guard ties to the run's fence.
// Clause: BFC-6.run-reservation-mismatch.
func TestGuardGoSettlementRunOfAnotherReservation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r, other := newRun(1), newRun(2)
	admit(t, b.admin, r)
	admit(t, b.admin, other)
	in := r.settlement(1, 1, "")
	in.BillingReservationID = other.reservationID
	_, err := b.settle(t, in)
	require.ErrorIs(t, err, billing.ErrSettlementConflict) // BFC-6.run-reservation-mismatch
	require.ErrorContains(t, err, "belongs to reservation")
	var n int
	require.NoError(t, b.admin.QueryRow(t.Context(), "SELECT count(*) FROM billing.settlement_input_watermarks").Scan(&n))
	require.Zero(t, n, "no watermark is written")
}

// TestGuardGoEvaluationOfAnotherOperation (BI-1): an evaluation of the
// fence's active, pending Work generation that names another finalization
// operation is ErrStaleWork, as the billing role, and records nothing: no
// database guard compares the evaluation's operation with its Work's (the
// Work just moves pending → evaluated), so this Go check is the refusal.
// Clause: BI-1.evaluation-operation-mismatch.
func TestGuardGoEvaluationOfAnotherOperation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := newRun(1)
	b.closed(t, r)
	d := b.decision(t, r, billingc.SuccessReleaseAll, "0", "2500")
	before := b.billingRows(t)
	ev := billing.Evaluation{FenceID: r.fenceID, WorkGeneration: d.WorkGeneration, OperationID: id("other-op"),
		Outcome: billing.EvaluationReconciliationDeferred, ReasonCode: "target_above_reservation",
		ReasonDetail: "target 3000 credits above reservation 2500", DecisionObject: &d.DecisionObject}
	_, err := tx(t, b.pool, func(ctx context.Context, tx pgx.Tx) (billing.EvaluationResult, error) {
		return billing.RecordEvaluationTx(ctx, tx, ev)
	})
	require.ErrorIs(t, err, billing.ErrStaleWork) // BI-1.evaluation-operation-mismatch
	require.ErrorContains(t, err, "evaluation names")
	require.Equal(t, before, b.billingRows(t), "nothing recorded")
	require.Equal(t, billing.FencePendingEvaluation, b.fence(t, r.fenceID).State)
	// The Work's own operation still evaluates, then commits nothing else.
	ev.OperationID = d.OperationID
	_, err = tx(t, b.pool, func(ctx context.Context, tx pgx.Tx) (billing.EvaluationResult, error) {
		return billing.RecordEvaluationTx(ctx, tx, ev)
	})
	require.NoError(t, err)
}
