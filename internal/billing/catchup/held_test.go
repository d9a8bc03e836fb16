package catchup_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/internal/billing/billingtest"
	"github.com/oceanway/core/internal/billing/catchup"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/ownerread/operationsread"
)

// fixedIdentities stands in for Operations' reservation (its own tests
// prove it): one identity per call.
type fixedIdentities struct{}

func (fixedIdentities) ReserveFinalizationCaseIdentity(_ context.Context, s operationsread.CaseScope) (operationsread.CaseIdentity, error) {
	return operationsread.CaseIdentity{Identity: cquad("fcir-" + s.FenceID), CaseRef: "fcase-" + s.FenceID, Generation: s.Generation,
		CaseRequestOperationID: cid("case-request", s.FenceID, s.Generation)}, nil
}

// OP-1 / BSC-2 (issue 31), on the real finalization fence: a settlement
// input that arrives while the fence is reconciliation_required is held for
// the resolution. The consumer's receipt is held_for_resolution, bound to
// the fence revision and the case generation, with no trigger, Work or
// generation; the watermark advanced and the fence did not move.
func TestOP1HeldForResolutionOnTheRealFence(t *testing.T) {
	t.Parallel()
	b := setup(t)
	in := billingtest.EnterCase(t, b.admin, b.pool, fixedIdentities{})
	var revision int64
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT finalization_fence_revision FROM billing.billing_finalization_fences
		WHERE billing_finalization_fence_id = $1`, in.Case.FenceID).Scan(&revision))
	consumer, err := catchup.NewConsumer(b.pool, catchup.ConsumerConfig{Inbox: inbox.Config{LockTimeout: time.Second},
		Finalization: catchup.FinalizationFenceObserver{}})
	require.NoError(t, err)
	dim := billingc.SettlementDimension{BillingReservationID: in.Case.BillingReservationID, BillingAccountID: in.Case.BillingAccountID,
		RunID: in.Case.RunID, RunStepID: cid("step"), ExecutionAttemptID: cid("attempt"), ChargeDimensionKey: "tokens.output",
		EconomicIdentity: envelope.SettlementEconomicIdentityV1{Kind: "credits"}}
	res, err := consumer.Consume(t.Context(), catchUpDelivery(inputEvent(dim, 1)))
	require.NoError(t, err)
	rc, err := receipt.DecodeBillingSettlementCatchUpConsumerReceipt(res.ReceiptBody)
	require.NoError(t, err)
	d := rc.Outcome.Durability
	require.Equal(t, receipt.DurabilityHeldForResolution, d.State)
	require.Nil(t, d.FinalizationWork)
	require.Equal(t, &receipt.HeldForResolution{FinalizationFenceRevision: revision, ReconciliationCaseRef: in.Case.ReconciliationCaseRef,
		ReconciliationGeneration: 1, ExpectedResolutionRevision: 1}, d.HeldForResolution)
	var after, version int64
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT f.finalization_fence_revision, m.settlement_input_state_version
		FROM billing.billing_finalization_fences f JOIN billing.settlement_input_watermarks m USING (billing_reservation_id)
		WHERE f.billing_finalization_fence_id = $1`, in.Case.FenceID).Scan(&after, &version))
	require.Equal(t, revision, after, "the case holds the fence")
	require.EqualValues(t, 1, version, "the watermark advanced")
}
