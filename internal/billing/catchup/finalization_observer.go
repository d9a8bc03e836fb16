package catchup

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/outbox/transport"
)

// FinalizationFenceObserver is the catch-up consumer's FinalizationInputObserver
// over the finalization fence (billing.ApplySettlementInputTx): it locks the fence,
// advances the dimension's watermark and schedules the next finalization
// Work generation; while the fence is reconciliation_required it only
// advances the watermark and answers held_for_resolution.
type FinalizationFenceObserver struct{}

var _ FinalizationInputObserver = FinalizationFenceObserver{}

// ObserveSettlementInputTx implements FinalizationInputObserver.
func (FinalizationFenceObserver) ObserveSettlementInputTx(ctx context.Context, tx pgx.Tx, in ObservedSettlementInput) (FinalizationInputObservation, error) {
	d := in.Dimension
	adv, err := billing.ApplySettlementInputTx(ctx, tx, billing.SettlementInput{
		EventID: in.EventID, BillingReservationID: d.BillingReservationID, RunID: d.RunID, RunStepID: d.RunStepID,
		ExecutionAttemptID: d.ExecutionAttemptID, ChargeDimensionKey: d.ChargeDimensionKey, SettlementDimensionID: d.SettlementDimensionID(),
		EconomicIdentity: d.EconomicIdentity, Snapshot: in.Input.Snapshot, StateVersion: in.Input.StateVersion,
	})
	switch {
	case errors.Is(err, billing.ErrFinalized):
		return FinalizationInputObservation{State: FinalizationInputFinalized}, nil
	case errors.Is(err, billing.ErrFenceNotBindable):
		return FinalizationInputObservation{State: FinalizationInputNotBindable}, nil
	case errors.Is(err, billing.ErrSettlementConflict):
		return FinalizationInputObservation{}, transport.NonRetryable(CodeIdentityConflict, err)
	case err != nil:
		return FinalizationInputObservation{}, err
	}
	switch adv.Outcome {
	case billing.SettlementWorkScheduled:
		s := adv.Scheduled
		return FinalizationInputObservation{State: FinalizationInputWorkScheduled, InboxRevision: adv.InboxRevision,
			WorkScheduled: &receipt.FinalizationWorkScheduled{FinalizationFenceRevision: s.FenceRevision,
				Work: receipt.FinalizationWorkBinding{WorkGeneration: s.Generation, TriggerSnapshot: s.Trigger, Work: s.Work}}}, nil
	case billing.SettlementAlreadyObserved:
		return FinalizationInputObservation{State: FinalizationInputAlreadyObserved, InboxRevision: adv.InboxRevision,
			Highest: &billingc.SettlementInput{Snapshot: adv.Highest, StateVersion: adv.HighestState}}, nil
	case billing.SettlementHeldForResolution:
		h := adv.Held
		return FinalizationInputObservation{State: FinalizationInputHeld, InboxRevision: adv.InboxRevision,
			Held: &receipt.HeldForResolution{FinalizationFenceRevision: h.FenceRevision, ReconciliationCaseRef: h.ReconciliationCaseRef,
				ReconciliationGeneration: h.ReconciliationGeneration, ExpectedResolutionRevision: 1}}, nil
	case billing.SettlementWaitingForClosure:
		return FinalizationInputObservation{State: FinalizationInputNotBindable, InboxRevision: adv.InboxRevision}, nil
	}
	return FinalizationInputObservation{}, fmt.Errorf("%w: finalization fence answered %q", ErrConflict, adv.Outcome)
}
