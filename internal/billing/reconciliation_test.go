package billing_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/internal/billing"
)

// caseOf is a stand-in for the identity Operations reserves for r's fence
// generation gen (billing binds it; Operations' own tests prove the
// reservation).
func caseOf(r run, gen int64) billing.CaseIdentity {
	return billing.CaseIdentity{Identity: quad(fmt.Sprintf("fcir-%d-%d", r.n, gen)), CaseRef: fmt.Sprintf("fcase-%d-%d", r.n, gen),
		Generation: gen, CaseRequestOperationID: id("case-request-op", r.n, gen)}
}

// reconcile enters reconciliation_required for r's active generation.
func (b *bundle) reconcile(t *testing.T, r run, c billing.CaseIdentity) (billing.ReconciliationResult, error) {
	t.Helper()
	f := b.fence(t, r.fenceID)
	require.NotNil(t, f.Active)
	_, op := b.workState(t, r.fenceID, *f.Active)
	return tx(t, b.pool, func(ctx context.Context, tx pgx.Tx) (billing.ReconciliationResult, error) {
		return billing.RecordReconciliationTx(ctx, tx, billing.Reconciliation{FenceID: r.fenceID, WorkGeneration: *f.Active,
			OperationID: op, ReasonCode: "target_above_reservation", ReasonDetail: "test", Decision: quad(fmt.Sprintf("bfd-%s-%d", r.runID, c.Generation)), Case: c})
	})
}

// OP-1 / BI-1 (issue 31): a reconciliation_required decision enters the
// case generation in one transaction, as the billing role: the evaluation,
// the case request bound to the reserved identity, the Work evaluated, the
// fence in reconciliation_required with that case, and
// billing.finalization-reconciliation.case-requested@1 with exactly one
// mandatory core_operations delivery. A second entrance for the same Work
// is stale; an identity of another generation is refused.
func TestOP1ReconciliationEntersTheReservedCase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := newRun(1)
	admit(t, b.admin, r)
	_, err := b.deliver(t, r.closure(""))
	require.NoError(t, err)

	_, err = b.reconcile(t, r, caseOf(r, 2))
	require.ErrorIs(t, err, billing.ErrCaseIdentityMismatch, "the first case is generation 1")

	res, err := b.reconcile(t, r, caseOf(r, 1))
	require.NoError(t, err)
	f := b.fence(t, r.fenceID)
	require.Equal(t, billing.FenceReconciliationRequired, f.State)
	require.Nil(t, f.Active)
	require.Equal(t, res.FenceRevision, f.Revision)
	state, _ := b.workState(t, r.fenceID, 2)
	require.Equal(t, billing.WorkEvaluated, state)

	var caseRef, outcome string
	var gen int64
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT f.reconciliation_case_ref, f.reconciliation_generation, e.outcome
		FROM billing.billing_finalization_fences f JOIN billing.finalization_evaluations e USING (billing_finalization_fence_id)
		WHERE f.billing_finalization_fence_id = $1 AND e.work_generation = 2`, r.fenceID).Scan(&caseRef, &gen, &outcome))
	require.Equal(t, "fcase-1-1", caseRef)
	require.EqualValues(t, 1, gen)
	require.Equal(t, billing.FenceReconciliationRequired, outcome)

	var eventType, destination, aggregate string
	var revision int64
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT e.event_type, e.aggregate_id::text, e.aggregate_revision, d.destination
		FROM outbox.outbox_events e JOIN outbox.outbox_deliveries d USING (event_id) WHERE e.event_id = $1`, res.EventID).
		Scan(&eventType, &aggregate, &revision, &destination))
	require.Equal(t, envelope.BillingFinalizationCaseRequestedV1, eventType)
	require.Equal(t, envelope.FinalizationCaseRequestAggregateID(r.fenceID, 1), aggregate)
	require.EqualValues(t, 1, revision)
	require.Equal(t, "core_operations", destination)
	p, err := envelope.PayloadOf[envelope.BillingFinalizationReconciliationCaseRequestedV1Payload](&res.Event)
	require.NoError(t, err)
	require.Equal(t, "none", p.PredecessorCase.State)
	require.EqualValues(t, 2, p.TriggeringBillingFinalizationWorkGeneration)
	require.Equal(t, caseOf(r, 1).Identity.Digest, p.FinalizationCaseIdentityReservationDigest)

	_, op := b.workState(t, r.fenceID, 2)
	_, err = tx(t, b.pool, func(ctx context.Context, tx pgx.Tx) (billing.ReconciliationResult, error) {
		return billing.RecordReconciliationTx(ctx, tx, billing.Reconciliation{FenceID: r.fenceID, WorkGeneration: 2,
			OperationID: op, ReasonCode: "target_above_reservation", Decision: quad("bfd-" + r.runID), Case: caseOf(r, 2)})
	})
	require.ErrorIs(t, err, billing.ErrStaleWork, "the fence has no active Work any more")
}

// OP-1 / BFC-6 (issue 31): while the fence is reconciliation_required a new
// settlement input only advances its watermark and is held for the
// resolution: no trigger, no Work, the fence and its case unchanged. An
// older input is still already_observed.
func TestOP1SettlementInputIsHeldForResolution(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := newRun(1)
	admit(t, b.admin, r)
	_, err := b.deliver(t, r.closure(""))
	require.NoError(t, err)
	_, err = b.settle(t, r.settlement(1, 2, ""))
	require.NoError(t, err)
	_, err = b.reconcile(t, r, caseOf(r, 1))
	require.NoError(t, err)
	before := b.fence(t, r.fenceID)

	adv, err := b.settle(t, r.settlement(1, 3, ""))
	require.NoError(t, err)
	require.Equal(t, billing.SettlementHeldForResolution, adv.Outcome)
	require.Nil(t, adv.Scheduled)
	require.Equal(t, &billing.Held{FenceRevision: before.Revision, ReconciliationCaseRef: "fcase-1-1", ReconciliationGeneration: 1}, adv.Held)
	require.Equal(t, before, b.fence(t, r.fenceID), "no new generation, the case is not left")
	var version int64
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT settlement_input_state_version FROM billing.settlement_input_watermarks
		WHERE billing_reservation_id = $1`, r.reservationID).Scan(&version))
	require.EqualValues(t, 3, version, "the watermark advanced")

	adv, err = b.settle(t, r.settlement(1, 2, ""))
	require.NoError(t, err)
	require.Equal(t, billing.SettlementAlreadyObserved, adv.Outcome)
}
