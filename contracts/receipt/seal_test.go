package receipt_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/strict"
)

// Consumers build receipts as Go values: Seal applies the same refinement
// rules as the decoder, so an invalid receipt can never be sealed.
func TestSeal_EnforcesRules(t *testing.T) {
	t.Parallel()
	exec := execSource("seal")
	cost := gatewaySource("seal-cost", receipt.EvidenceProviderCost)
	met := func(src receipt.MeteringSource, lane receipt.MeteringLane) *receipt.MeteringInputProcessorConsumerReceipt {
		return &receipt.MeteringInputProcessorConsumerReceipt{
			Header: receipt.Header{Receipt: strict.Quadruple{Ref: "r"}, EventID: uuidOf("e"), EventEnvelopeDigest: dig("env")},
			Source: src, Outcome: receipt.OutcomeAdvanced, Lane: lane, CommittedAt: at(1),
		}
	}
	processed := &receipt.ProcessedWork{Work: work("p", 1), Processing: quad("processing"), Finished: quad("finish")}
	held := &receipt.HeldForResolution{FinalizationFenceRevision: 1, ReconciliationCaseRef: "case", ReconciliationGeneration: 1, ExpectedResolutionRevision: 1}
	finWork := &receipt.FinalizationWorkScheduled{FinalizationFenceRevision: 1, Work: receipt.FinalizationWorkBinding{WorkGeneration: 1, TriggerSnapshot: quad("t"), Work: quad("w")}}
	bsc := func(d *receipt.CatchUpDurability) *receipt.BillingSettlementCatchUpConsumerReceipt {
		r := catchUpGoldens()[0].obj.(*receipt.BillingSettlementCatchUpConsumerReceipt)
		c := *r
		c.Outcome = receipt.CatchUpOutcome{Kind: receipt.CatchUpWatermarkAdvanced, InboxRevision: 1, Durability: d}
		return &c
	}
	cases := []struct {
		name string
		obj  interface{ Seal() error }
		want error
	}{
		{"MET pending without active work", met(exec, eligibilityLane(1, receipt.EligibilityCoordination{State: receipt.StatePending})), receipt.ErrActiveWorkNotPending},
		{"MET waiting with active work", met(exec, eligibilityLane(1, receipt.EligibilityCoordination{State: receipt.StateWaitingForGatewayUsage, ActiveWork: pendingWork("w", 1)})), receipt.ErrActiveWorkNotNone},
		{"MET blocked with finish", met(exec, eligibilityLane(1, receipt.EligibilityCoordination{State: receipt.StateBlockedOnOwnerConflict, ActiveWork: pendingWork("b", 1), Blocked: blockedQuad("b"),
			LastFinishedWork: &receipt.FinishedWork{Work: work("b", 1), Finished: quad("f")}})), receipt.ErrBlockedCarriesFinish},
		{"MET blocked without fact", met(exec, eligibilityLane(1, receipt.EligibilityCoordination{State: receipt.StateBlockedOnOwnerConflict, ActiveWork: pendingWork("b", 1)})), receipt.ErrBlockedMissingFact},
		{"MET cost blocked with processing", met(cost, costLane(cost, 1, receipt.ProviderCostCoordination{State: receipt.StateBlockedOnProcessingConflict, ActiveWork: pendingWork("c", 1), Blocked: blockedQuad("c"), Processed: processed})), receipt.ErrBlockedCarriesProcessing},
		{"MET reconciliation not conflicting", met(cost, costLane(cost, 1, receipt.ProviderCostCoordination{State: receipt.StateReconciliationRequired, ProcessingOutcome: receipt.ProcessingReconciliationRequired,
			AvailabilityState: receipt.AvailabilityAvailable, StateReasonCode: "x", Processed: processed})), receipt.ErrReconciliationNotConflicting},
		{"MET finished without processing", met(cost, costLane(cost, 1, receipt.ProviderCostCoordination{State: receipt.StateNoCostEvidence, ProcessingOutcome: receipt.ProcessingNoCostEvidence})), receipt.ErrTerminalIncomplete},
		{"MET processing outcome", met(cost, costLane(cost, 1, receipt.ProviderCostCoordination{State: receipt.StateNoCostEvidence, ProcessingOutcome: receipt.ProcessingAvailableApplied, Processed: processed})), receipt.ErrProcessingOutcome},
		{"MET execution source on cost lane", met(exec, costLane(cost, 1, receipt.ProviderCostCoordination{State: receipt.StatePending, ActiveWork: pendingWork("c", 1)})), receipt.ErrExecutionSourceLane},
		{"MET unsorted snapshots", met(exec, eligibilityLane(1, receipt.EligibilityCoordination{State: receipt.StateApplied, Applied: &receipt.AppliedWork{Work: work("a", 1), Finished: quad("f"),
			Snapshots: receipt.SnapshotSet{Count: 2, Snapshots: []receipt.SettlementSnapshot{
				{RunStepID: exec.ExecutionEligibility.RunStepID, ExecutionAttemptID: exec.ExecutionEligibility.ExecutionAttemptID, ChargeDimensionKey: "b", Snapshot: quad("b"), StateVersion: 1},
				{RunStepID: exec.ExecutionEligibility.RunStepID, ExecutionAttemptID: exec.ExecutionEligibility.ExecutionAttemptID, ChargeDimensionKey: "a", Snapshot: quad("a"), StateVersion: 1},
			}}}})), receipt.ErrSnapshotsNotSorted},
		{"BFC closure already superseded", &receipt.BillingFinalizationCoordinatorConsumerReceipt{Header: receipt.Header{Receipt: strict.Quadruple{Ref: "r"}, EventID: uuidOf("e"), EventEnvelopeDigest: dig("env")},
			Source: closureSource("s"), Outcome: receipt.CoordinatorOutcome{State: receipt.CoordinatorAlreadySuperseded, FinalizationFenceRevision: 1}, CommittedAt: at(1)}, receipt.ErrClosureNotWorkScheduled},
		{"BSC held with finalization work", bsc(&receipt.CatchUpDurability{State: receipt.DurabilityHeldForResolution, HeldForResolution: held, FinalizationWork: finWork}), receipt.ErrHeldCarriesWork},
		{"BSC finalization work with catch-up work", bsc(&receipt.CatchUpDurability{State: receipt.DurabilityFinalizationWorkScheduled, FinalizationWork: finWork,
			SettlementCatchUp: &receipt.SettlementCatchUpScheduled{SettlementCatchUpFenceRevision: 1, WorkGeneration: 1, Work: quad("w"), BillingCatchUpValidationOperationID: "op"}}), receipt.ErrDurabilityMixed},
		{"Finished superseded by older generation", &receipt.MeteringInputWorkAttemptFinished{Finished: strict.Quadruple{Ref: "f"}, WorkAttemptHead: workHead("f", eligibilityWorkLane, 4),
			Outcome: receipt.FinishOutcome{Kind: receipt.LaneEligibility, State: receipt.FinishSuperseded, SupersededByWorkGeneration: 3}, FinishedAt: at(1)}, receipt.ErrSupersededGeneration},
		{"Blocked cause not for lane", &receipt.MeteringInputWorkAttemptBlocked{Blocked: strict.Quadruple{Ref: "b"}, WorkAttemptHead: workHead("b", costWorkLane, 1),
			BlockingCause: receipt.BlockingCause{Kind: receipt.CauseGatewayUsageOwnerConflict, Fact: quad("c")}, BlockedAt: at(1)}, receipt.ErrBlockingCauseLane},
		{"Ops receipt without ref", &receipt.OperationsProjectionAppliedReceipt{ProjectionName: "p", ProjectionVersion: 1}, strict.ErrMissingField},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.ErrorIs(t, tc.obj.Seal(), tc.want)
		})
	}
}

// BFC: the closure/already_superseded violation satisfies both sentences.
func TestCoordinatorClosureSuperseded_BothRules_BFC(t *testing.T) {
	t.Parallel()
	r := &receipt.BillingFinalizationCoordinatorConsumerReceipt{Header: receipt.Header{Receipt: strict.Quadruple{Ref: "r"}, EventID: uuidOf("e"), EventEnvelopeDigest: dig("env")},
		Source: closureSource("s"), Outcome: receipt.CoordinatorOutcome{State: receipt.CoordinatorAlreadySuperseded, FinalizationFenceRevision: 1}, CommittedAt: at(1)}
	err := r.Seal()
	require.ErrorIs(t, err, receipt.ErrClosureNotWorkScheduled)
	require.ErrorIs(t, err, receipt.ErrSupersededNotResolution)
	var fe *strict.FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "$.outcome.state", fe.Path)
}

// SortSnapshots yields the canonical order and count the applied state needs.
func TestSortSnapshots(t *testing.T) {
	t.Parallel()
	s := snapshots("step", "attempt", "z", "a", "m")
	require.EqualValues(t, 3, s.Count)
	require.Equal(t, []string{"a", "m", "z"}, []string{s.Snapshots[0].ChargeDimensionKey, s.Snapshots[1].ChargeDimensionKey, s.Snapshots[2].ChargeDimensionKey})
}
