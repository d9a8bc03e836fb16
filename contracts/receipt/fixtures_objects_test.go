package receipt_test

import (
	"fmt"

	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
)

// Valid, sealed instances of every object, at least two per union branch.
// They are the source of the goldens under testdata/golden (go test -update).

type object interface {
	ToJSON() map[string]any
	Validate() error
}

type sealer interface {
	object
	Seal() error
}

func mustSeal[T sealer](x T) T {
	if err := x.Seal(); err != nil {
		panic(fmt.Sprintf("fixture does not seal: %v", err))
	}
	return x
}

type golden struct {
	kind string
	name string
	obj  object
}

// --- building blocks ------------------------------------------------------

func tenant(label string, withProject bool) receipt.Tenant {
	t := receipt.Tenant{Kind: receipt.TenantOrganization, ID: uuidOf("tenant:" + label), WorkspaceID: uuidOf("workspace:" + label)}
	if withProject {
		t.ProjectID = uuidOf("project:" + label)
	}
	return t
}

func work(label string, generation int64) receipt.WorkBinding {
	return receipt.WorkBinding{Generation: generation, OperationID: uuidOf("operation:" + label), Work: quad("metering-work:" + label)}
}

func snapshots(runStepID, attemptID string, dims ...string) receipt.SnapshotSet {
	var out []receipt.SettlementSnapshot
	for i, d := range dims {
		out = append(out, receipt.SettlementSnapshot{
			RunStepID: runStepID, ExecutionAttemptID: attemptID, ChargeDimensionKey: d,
			Snapshot: quad("settlement-input:" + attemptID + ":" + d), StateVersion: int64(i + 1),
		})
	}
	return receipt.SortSnapshots(out)
}

// --- Metering receipt -----------------------------------------------------

func execSource(label string) receipt.MeteringSource {
	return receipt.MeteringSource{Kind: receipt.SourceExecutionEligibility, ExecutionEligibility: &receipt.ExecutionEligibilitySource{
		Tenant:                   tenant(label, len(label)%2 == 0),
		BillingReservationID:     uuidOf("reservation:" + label),
		BillingAccountID:         uuidOf("account:" + label),
		RunID:                    uuidOf("run:" + label),
		RunStepID:                uuidOf("step:" + label),
		ExecutionAttemptID:       uuidOf("attempt:" + label),
		AttemptExecutionManifest: quad("attempt-manifest:" + label),
		ExecutionEligibilityFact: quad("eligibility-fact:" + label),
	}}
}

func gatewaySource(label, kind string) receipt.MeteringSource {
	return receipt.MeteringSource{Kind: receipt.SourceGatewayAvailability, GatewayAvailability: &receipt.GatewayAvailabilitySource{
		ExecutionAttemptID:              uuidOf("attempt:" + label),
		GatewayDeploymentID:             "gw-deploy-" + label,
		AttemptExecutionManifest:        quad("attempt-manifest:" + label),
		ProviderEvidenceKind:            kind,
		EvidenceDimensionKey:            "tokens.output",
		CurrentAvailability:             quad("availability:" + label),
		CurrentAvailabilityStateVersion: 3,
	}}
}

func eligibilityLane(latest int64, c receipt.EligibilityCoordination) receipt.MeteringLane {
	return receipt.MeteringLane{Kind: receipt.LaneEligibility, Eligibility: &receipt.EligibilityLane{
		FenceRevision: latest + 2, LatestWorkGeneration: latest, TriggerDigest: dig(fmt.Sprintf("eligibility-trigger:%d:%s", latest, c.State)), Coordination: c,
	}}
}

func costLane(src receipt.MeteringSource, latest int64, c receipt.ProviderCostCoordination) receipt.MeteringLane {
	g := src.GatewayAvailability
	return receipt.MeteringLane{Kind: receipt.LaneProviderCost, ProviderCost: &receipt.ProviderCostLane{
		GatewayDeploymentID: g.GatewayDeploymentID, SourceEvidenceDimensionKey: g.EvidenceDimensionKey,
		FenceRevision: latest + 1, LatestWorkGeneration: latest, TriggerDigest: dig(fmt.Sprintf("cost-trigger:%d:%s", latest, c.State)), Coordination: c,
	}}
}

func meteringReceipt(label string, src receipt.MeteringSource, outcome string, lane receipt.MeteringLane) *receipt.MeteringInputProcessorConsumerReceipt {
	return mustSeal(&receipt.MeteringInputProcessorConsumerReceipt{
		Header:      receipt.Header{Receipt: strict.Quadruple{Ref: "mipr-" + label}, EventID: uuidOf("event:" + label), EventEnvelopeDigest: dig("envelope:" + label)},
		Source:      src,
		Outcome:     outcome,
		Lane:        lane,
		CommittedAt: at(5),
	})
}

func attemptOf(src receipt.MeteringSource) (runStepID, attemptID string) {
	if e := src.ExecutionEligibility; e != nil {
		return e.RunStepID, e.ExecutionAttemptID
	}
	return uuidOf("step:gateway"), src.GatewayAvailability.ExecutionAttemptID
}

func pendingWork(label string, gen int64) *receipt.WorkBinding {
	w := work(label, gen)
	return &w
}

func blockedQuad(label string) *strict.Quadruple {
	q := quad("work-blocked:" + label)
	return &q
}

func eligibilityStates(label string, src receipt.MeteringSource) map[string]receipt.MeteringLane {
	step, attempt := attemptOf(src)
	return map[string]receipt.MeteringLane{
		"pending": eligibilityLane(2, receipt.EligibilityCoordination{State: receipt.StatePending, ActiveWork: pendingWork(label, 2)}),
		"applied": eligibilityLane(1, receipt.EligibilityCoordination{State: receipt.StateApplied, Applied: &receipt.AppliedWork{
			Work: work(label, 1), Finished: quad("work-finished:" + label), Snapshots: snapshots(step, attempt, "tokens.output", "tokens.input", "requests"),
		}}),
		"blocked_on_owner_conflict": eligibilityLane(1, receipt.EligibilityCoordination{State: receipt.StateBlockedOnOwnerConflict,
			ActiveWork: pendingWork(label, 1), Blocked: blockedQuad(label)}),
	}
}

func meteringGoldens() []golden {
	var out []golden
	add := func(name string, r *receipt.MeteringInputProcessorConsumerReceipt) {
		out = append(out, golden{receipt.KindMeteringInputProcessorConsumerReceipt, name, r})
	}
	for _, label := range []string{"exec-a", "exec-bb"} {
		src := execSource(label)
		for state, lane := range eligibilityStates(label, src) {
			add("execution-"+state+"-"+label, meteringReceipt(label+state, src, receipt.OutcomeAdvanced, lane))
		}
		add("execution-waiting_for_gateway_usage-none-"+label, meteringReceipt(label+"wait-none", src, receipt.OutcomeAdvanced,
			eligibilityLane(0, receipt.EligibilityCoordination{State: receipt.StateWaitingForGatewayUsage})))
		add("execution-waiting_for_gateway_usage-available-"+label, meteringReceipt(label+"wait-avail", src, receipt.OutcomeAlreadyObserved,
			eligibilityLane(1, receipt.EligibilityCoordination{State: receipt.StateWaitingForGatewayUsage,
				LastFinishedWork: &receipt.FinishedWork{Work: work(label, 1), Finished: quad("work-finished:" + label)}})))
	}
	for _, label := range []string{"usage-a", "usage-bb"} {
		src := gatewaySource(label, receipt.EvidenceProviderUsage)
		for state, lane := range eligibilityStates(label, src) {
			add("gateway-usage-"+state+"-"+label, meteringReceipt(label+state, src, receipt.OutcomeAdvanced, lane))
		}
		add("gateway-usage-waiting_for_execution-none-"+label, meteringReceipt(label+"wait-none", src, receipt.OutcomeAdvanced,
			eligibilityLane(0, receipt.EligibilityCoordination{State: receipt.StateWaitingForExecution})))
		add("gateway-usage-waiting_for_execution-available-"+label, meteringReceipt(label+"wait-avail", src, receipt.OutcomeAlreadyObserved,
			eligibilityLane(2, receipt.EligibilityCoordination{State: receipt.StateWaitingForExecution,
				LastFinishedWork: &receipt.FinishedWork{Work: work(label, 2), Finished: quad("work-finished:" + label)}})))
	}
	for _, label := range []string{"cost-a", "cost-bb"} {
		src := gatewaySource(label, receipt.EvidenceProviderCost)
		processed := &receipt.ProcessedWork{Work: work(label, 3), Processing: quad("cost-processing:" + label), Finished: quad("work-finished:" + label)}
		states := map[string]receipt.ProviderCostCoordination{
			"pending":                        {State: receipt.StatePending, ActiveWork: pendingWork(label, 3)},
			"availability_processed":         {State: receipt.StateAvailabilityProcessed, ProcessingOutcome: receipt.ProcessingAvailableApplied, Processed: processed},
			"waiting_for_evidence":           {State: receipt.StateWaitingForEvidence, ProcessingOutcome: receipt.ProcessingWaitingForEvidence, Processed: processed},
			"no_cost_evidence":               {State: receipt.StateNoCostEvidence, ProcessingOutcome: receipt.ProcessingNoCostEvidence, Processed: processed},
			"blocked_on_processing_conflict": {State: receipt.StateBlockedOnProcessingConflict, ActiveWork: pendingWork(label, 3), Blocked: blockedQuad(label)},
			"reconciliation_required": {State: receipt.StateReconciliationRequired, ProcessingOutcome: receipt.ProcessingReconciliationRequired,
				AvailabilityState: receipt.AvailabilityConflicting, StateReasonCode: "provider_cost_disagreement", Processed: processed},
		}
		outcome := receipt.OutcomeAdvanced
		if label == "cost-bb" {
			outcome = receipt.OutcomeAlreadyObserved
		}
		for state, c := range states {
			add("gateway-cost-"+state+"-"+label, meteringReceipt(label+state, src, outcome, costLane(src, 3, c)))
		}
	}
	return out
}

// --- work-attempt facts ---------------------------------------------------

func workHead(label string, lane receipt.MeteringInputWorkLane, gen int64) receipt.WorkAttemptHead {
	return receipt.WorkAttemptHead{
		Work: quad("metering-work:" + label), OperationID: uuidOf("operation:" + label),
		ExecutionAttemptID: uuidOf("attempt:" + label), WorkGeneration: gen, Lane: lane,
		LaneTriggerDigest: dig("lane-trigger:" + label), AttemptNumber: 2, FencingToken: "fence-" + hexOf("token:" + label)[:16],
	}
}

var (
	eligibilityWorkLane = receipt.MeteringInputWorkLane{Kind: receipt.LaneEligibility}
	costWorkLane        = receipt.MeteringInputWorkLane{Kind: receipt.LaneProviderCost, GatewayDeploymentID: "gw-deploy-1", SourceEvidenceDimensionKey: "cost.usd"}
)

func finishedFact(label string, lane receipt.MeteringInputWorkLane, outcome receipt.FinishOutcome) *receipt.MeteringInputWorkAttemptFinished {
	return mustSeal(&receipt.MeteringInputWorkAttemptFinished{
		Finished: strict.Quadruple{Ref: "miwaf-" + label}, WorkAttemptHead: workHead(label, lane, 2),
		Outcome: outcome, FinishedAt: at(7),
	})
}

func finishedGoldens() []golden {
	var out []golden
	add := func(name string, x *receipt.MeteringInputWorkAttemptFinished) {
		out = append(out, golden{receipt.KindMeteringInputWorkAttemptFinished, name, x})
	}
	for _, w := range []string{receipt.WaitingForExecutionEligibility, receipt.WaitingForGatewayUsage} {
		add("waiting_for_counterpart-"+w, finishedFact("wait-"+w, eligibilityWorkLane, receipt.FinishOutcome{
			Kind: receipt.LaneEligibility, State: receipt.FinishWaitingForCounterpart, WaitingFor: w}))
	}
	for i, dims := range [][]string{{"tokens.output"}, {"tokens.output", "requests", "tokens.input"}} {
		label := fmt.Sprintf("applied-%d", i)
		s := snapshots(uuidOf("step:"+label), uuidOf("attempt:"+label), dims...)
		add(label, finishedFact(label, eligibilityWorkLane, receipt.FinishOutcome{Kind: receipt.LaneEligibility, State: receipt.FinishApplied, Snapshots: &s}))
	}
	for i := range 2 {
		label := fmt.Sprintf("availability_processed-%d", i)
		q := quad("cost-processing:" + label)
		add(label, finishedFact(label, costWorkLane, receipt.FinishOutcome{Kind: receipt.LaneProviderCost, State: receipt.FinishAvailabilityProcessed, Processing: &q}))
	}
	add("superseded-eligibility", finishedFact("superseded-e", eligibilityWorkLane, receipt.FinishOutcome{Kind: receipt.LaneEligibility, State: receipt.FinishSuperseded, SupersededByWorkGeneration: 3}))
	add("superseded-provider_cost", finishedFact("superseded-c", costWorkLane, receipt.FinishOutcome{Kind: receipt.LaneProviderCost, State: receipt.FinishSuperseded, SupersededByWorkGeneration: 7}))
	return out
}

func blockedFact(label string, lane receipt.MeteringInputWorkLane, kind, prefix string) *receipt.MeteringInputWorkAttemptBlocked {
	return mustSeal(&receipt.MeteringInputWorkAttemptBlocked{
		Blocked: strict.Quadruple{Ref: "miwab-" + label}, WorkAttemptHead: workHead(label, lane, 1),
		BlockingCause: receipt.BlockingCause{Kind: kind, Fact: quad(prefix + ":" + label)}, BlockedAt: at(8),
	})
}

func blockedGoldens() []golden {
	var out []golden
	causes := []struct {
		kind string
		lane receipt.MeteringInputWorkLane
	}{
		{receipt.CauseExecutionEligibilityOwnerConflict, eligibilityWorkLane},
		{receipt.CauseGatewayUsageOwnerConflict, eligibilityWorkLane},
		{receipt.CauseGatewayBindingOwnerConflict, eligibilityWorkLane},
		{receipt.CauseEligibilityProcessingConflict, eligibilityWorkLane},
		{receipt.CauseProviderCostProcessingConflict, costWorkLane},
	}
	for _, c := range causes {
		for i := range 2 {
			label := fmt.Sprintf("%s-%d", c.kind, i)
			out = append(out, golden{receipt.KindMeteringInputWorkAttemptBlocked, label, blockedFact(label, c.lane, c.kind, "conflict")})
		}
	}
	return out
}

// --- conflict evidences ---------------------------------------------------

func eligibilityEvidence(label, stage string) *receipt.EligibilityProcessingConflictEvidence {
	return mustSeal(&receipt.EligibilityProcessingConflictEvidence{
		Evidence: strict.Quadruple{Ref: "epce-" + label},
		RunID:    uuidOf("run:" + label), RunStepID: uuidOf("step:" + label), ExecutionAttemptID: uuidOf("attempt:" + label),
		AttemptExecutionManifest: quad("attempt-manifest:" + label), ExecutionEligibilityFact: quad("eligibility-fact:" + label),
		Work: quad("metering-work:" + label), OperationID: uuidOf("operation:" + label), WorkGeneration: 1,
		LaneTriggerDigest: dig("lane-trigger:" + label), ValidationStage: stage,
		ConflictingCandidateDigest: dig("candidate:" + label), ReasonCode: "meter_event_digest_conflict", ObservedAt: at(9),
	})
}

func providerCostEvidence(label string, cause receipt.ProviderCostCause) *receipt.ProviderCostProcessingConflictEvidence {
	return mustSeal(&receipt.ProviderCostProcessingConflictEvidence{
		Evidence: strict.Quadruple{Ref: "pcpce-" + label},
		Work:     quad("metering-work:" + label), OperationID: uuidOf("operation:" + label), WorkGeneration: 2,
		RunID: uuidOf("run:" + label), RunStepID: uuidOf("step:" + label), ExecutionAttemptID: uuidOf("attempt:" + label),
		GatewayDeploymentID: "gw-deploy-1", SourceEvidenceDimensionKey: "cost.usd",
		AttemptExecutionManifest: quad("attempt-manifest:" + label), AttemptRouteBinding: quad("route-binding:" + label),
		GatewayRouteSnapshot: quad("route-snapshot:" + label), CostAvailability: quad("cost-availability:" + label),
		CostAvailabilityVersion: 4, Cause: cause, DetectedAt: at(10),
	})
}

func evidenceGoldens() []golden {
	out := []golden{
		{receipt.KindEligibilityProcessingConflictEvidence, "meter_event", eligibilityEvidence("e1", "meter_event")},
		{receipt.KindEligibilityProcessingConflictEvidence, "settlement_input", eligibilityEvidence("e2", "settlement_input")},
	}
	for i := range 2 {
		gw := quad(fmt.Sprintf("gateway-evidence-conflict:%d", i))
		bind := quad(fmt.Sprintf("gateway-binding-conflict:%d", i))
		out = append(out,
			golden{receipt.KindProviderCostProcessingConflictEvidence, fmt.Sprintf("gateway_owner_conflict-%d", i),
				providerCostEvidence(fmt.Sprintf("gw%d", i), receipt.ProviderCostCause{Kind: receipt.CostCauseGatewayOwnerConflict, Fact: &gw})},
			golden{receipt.KindProviderCostProcessingConflictEvidence, fmt.Sprintf("gateway_binding_owner_conflict-%d", i),
				providerCostEvidence(fmt.Sprintf("bind%d", i), receipt.ProviderCostCause{Kind: receipt.CostCauseGatewayBindingOwnerConflict, Fact: &bind})},
		)
	}
	for i, stage := range []string{"provider_cost_mapping", "route_validation_receipt"} {
		out = append(out, golden{receipt.KindProviderCostProcessingConflictEvidence, "metering_deterministic_validation-" + stage,
			providerCostEvidence(fmt.Sprintf("local%d", i), receipt.ProviderCostCause{Kind: receipt.CostCauseMeteringDeterministicValidation,
				ValidationStage: stage, ConflictingCandidateDigest: dig("cost-candidate:" + stage), ReasonCode: "normalized_cost_mismatch"})})
	}
	return out
}

// --- billing --------------------------------------------------------------

func catchUpBlocked(label string) *receipt.BillingSettlementCatchUpWorkAttemptBlocked {
	return mustSeal(&receipt.BillingSettlementCatchUpWorkAttemptBlocked{
		Blocked: strict.Quadruple{Ref: "bscwab-" + label}, Work: quad("catch-up-work:" + label),
		BillingCatchUpValidationOperationID: uuidOf("catch-up-op:" + label),
		BillingReservationID:                uuidOf("reservation:" + label), BillingAccountID: uuidOf("account:" + label),
		RunID: uuidOf("run:" + label), RunStepID: uuidOf("step:" + label), ExecutionAttemptID: uuidOf("attempt:" + label),
		ChargeDimensionKey: "tokens.output", WorkGeneration: 2, AttemptNumber: 1, FencingToken: "fence-" + label,
		BlockingCause: receipt.BlockingCause{Kind: receipt.CauseSettlementInputOwnerConflict, Fact: quad("settlement-input-conflict:" + label)},
		BlockedAt:     at(11),
	})
}

func closureSource(label string) receipt.CoordinatorSource {
	return receipt.CoordinatorSource{Kind: receipt.CoordinatorSourceExecutionClosure, Closure: &receipt.ExecutionClosureSource{
		Tenant: tenant(label, len(label)%2 == 1), BillingReservationID: uuidOf("reservation:" + label), BillingAccountID: uuidOf("account:" + label),
		RunID: uuidOf("run:" + label), ClosureOperationID: uuidOf("closure-op:" + label),
		RunAdmissionManifest: quad("run-admission:" + label), RunExecutionFinalization: quad("run-finalization:" + label),
		RunExecutionFinalizationStateVersion: 1, AttemptSetManifest: quad("attempt-set:" + label), AttemptCount: int64(len(label) % 3),
	}}
}

func resolutionSource(label string) receipt.CoordinatorSource {
	return receipt.CoordinatorSource{Kind: receipt.CoordinatorSourceResolution, Resolution: &receipt.ResolutionSource{
		Tenant: tenant(label, true), BillingReservationID: uuidOf("reservation:" + label), BillingAccountID: uuidOf("account:" + label),
		RunID: uuidOf("run:" + label), BillingFinalizationFenceID: uuidOf("fence:" + label),
		ReconciliationCaseRef: "case-" + label, ReconciliationGeneration: 2, ResolutionRevision: 1,
		ResolutionOperationID:                       uuidOf("resolution-op:" + label),
		FinalizationCaseIdentityReservation:         quad("case-identity:" + label),
		FinalizationReconciliationResolutionApplied: quad("resolution-applied:" + label),
		ActorWorkforcePrincipalID:                   "wfp:ops-" + label,
	}}
}

func workScheduled(label string, fence int64) receipt.CoordinatorOutcome {
	return receipt.CoordinatorOutcome{State: receipt.CoordinatorWorkScheduled, FinalizationFenceRevision: fence, Work: &receipt.FinalizationWorkBinding{
		WorkGeneration: fence, TriggerSnapshot: quad("trigger:" + label), Work: quad("finalization-work:" + label),
	}}
}

func coordinatorReceipt(label string, src receipt.CoordinatorSource, out receipt.CoordinatorOutcome) *receipt.BillingFinalizationCoordinatorConsumerReceipt {
	return mustSeal(&receipt.BillingFinalizationCoordinatorConsumerReceipt{
		Header: receipt.Header{Receipt: strict.Quadruple{Ref: "bfccr-" + label}, EventID: uuidOf("event:" + label), EventEnvelopeDigest: dig("envelope:" + label)},
		Source: src, Outcome: out, CommittedAt: at(12),
	})
}

func coordinatorGoldens() []golden {
	var out []golden
	for _, label := range []string{"c1", "c22"} {
		out = append(out, golden{receipt.KindBillingFinalizationCoordinatorConsumerReceipt, "execution_closure-work_scheduled-" + label,
			coordinatorReceipt("closure-"+label, closureSource(label), workScheduled(label, 2))})
		out = append(out, golden{receipt.KindBillingFinalizationCoordinatorConsumerReceipt, "resolution-work_scheduled-" + label,
			coordinatorReceipt("resolution-"+label, resolutionSource(label), workScheduled(label, 5))})
		out = append(out, golden{receipt.KindBillingFinalizationCoordinatorConsumerReceipt, "resolution-already_superseded-" + label,
			coordinatorReceipt("superseded-"+label, resolutionSource(label), receipt.CoordinatorOutcome{State: receipt.CoordinatorAlreadySuperseded, FinalizationFenceRevision: 6})})
	}
	return out
}

func settlementInput(label string, version int64) receipt.SettlementInputRef {
	return receipt.SettlementInputRef{Snapshot: quad(fmt.Sprintf("settlement-input:%s:%d", label, version)), StateVersion: version}
}

func catchUpReceipt(label string, econ receipt.SettlementEconomicIdentity, event receipt.SettlementInputRef, out receipt.CatchUpOutcome) *receipt.BillingSettlementCatchUpConsumerReceipt {
	return mustSeal(&receipt.BillingSettlementCatchUpConsumerReceipt{
		Header: receipt.Header{Receipt: strict.Quadruple{Ref: "bsccr-" + label}, EventID: uuidOf("event:" + label), EventEnvelopeDigest: dig("envelope:" + label)},
		Tenant: tenant(label, len(label)%2 == 0), BillingReservationID: uuidOf("reservation:" + label), BillingAccountID: uuidOf("account:" + label),
		RunID: uuidOf("run:" + label), RunStepID: uuidOf("step:" + label), ExecutionAttemptID: uuidOf("attempt:" + label),
		ChargeDimensionKey: "tokens.output", EconomicIdentity: econ, EventSettlementInput: event, Outcome: out, CommittedAt: at(13),
	})
}

var (
	credits     = receipt.SettlementEconomicIdentity{Kind: receipt.EconomicCredits}
	entitlement = receipt.SettlementEconomicIdentity{Kind: receipt.EconomicEntitlement, EntitlementKey: "gpu-hours", Unit: "hour"}
	money       = receipt.SettlementEconomicIdentity{Kind: receipt.EconomicMoney, Currency: "EUR"}
)

func catchUpGoldens() []golden {
	var out []golden
	add := func(name string, r *receipt.BillingSettlementCatchUpConsumerReceipt) {
		out = append(out, golden{receipt.KindBillingSettlementCatchUpConsumerReceipt, name, r})
	}
	for i, econ := range []receipt.SettlementEconomicIdentity{credits, money} {
		label := fmt.Sprintf("fin%d", i)
		add("finalization_work_scheduled-"+econ.Kind, catchUpReceipt(label, econ, settlementInput(label, 2), receipt.CatchUpOutcome{
			Kind: receipt.CatchUpWatermarkAdvanced, InboxRevision: 2, Durability: &receipt.CatchUpDurability{
				State: receipt.DurabilityFinalizationWorkScheduled, FinalizationWork: &receipt.FinalizationWorkScheduled{
					FinalizationFenceRevision: 3, Work: receipt.FinalizationWorkBinding{WorkGeneration: 2, TriggerSnapshot: quad("trigger:" + label), Work: quad("finalization-work:" + label)},
				}}}))
	}
	for i, econ := range []receipt.SettlementEconomicIdentity{entitlement, credits} {
		label := fmt.Sprintf("catch%d", i)
		add("settlement_catch_up_scheduled-"+econ.Kind, catchUpReceipt(label, econ, settlementInput(label, 4), receipt.CatchUpOutcome{
			Kind: receipt.CatchUpWatermarkAdvanced, InboxRevision: 4, Durability: &receipt.CatchUpDurability{
				State: receipt.DurabilitySettlementCatchUpScheduled, SettlementCatchUp: &receipt.SettlementCatchUpScheduled{
					SettlementCatchUpFenceRevision: 2, WorkGeneration: 2, Work: quad("catch-up-work:" + label),
					BillingCatchUpValidationOperationID: uuidOf("catch-up-op:" + label),
				}}}))
	}
	for i, econ := range []receipt.SettlementEconomicIdentity{money, entitlement} {
		label := fmt.Sprintf("held%d", i)
		add("held_for_resolution-"+econ.Kind, catchUpReceipt(label, econ, settlementInput(label, 3), receipt.CatchUpOutcome{
			Kind: receipt.CatchUpWatermarkAdvanced, InboxRevision: 3, Durability: &receipt.CatchUpDurability{
				State: receipt.DurabilityHeldForResolution, HeldForResolution: &receipt.HeldForResolution{
					FinalizationFenceRevision: 4, ReconciliationCaseRef: "case-" + label, ReconciliationGeneration: 1, ExpectedResolutionRevision: 1,
				}}}))
	}
	for i, highest := range []int64{5, 2} {
		label := fmt.Sprintf("observed%d", i)
		event := settlementInput(label, 2)
		h := settlementInput(label, highest)
		add(fmt.Sprintf("already_observed-%d", highest), catchUpReceipt(label, credits, event, receipt.CatchUpOutcome{
			Kind: receipt.CatchUpAlreadyObserved, InboxRevision: 6, HighestObserved: &h}))
	}
	return out
}

func allGoldens() []golden {
	var out []golden
	for _, dest := range route.Destinations {
		for i := range 2 {
			label := fmt.Sprintf("%s-%d", dest, i)
			a, err := receipt.NewAck(dest, uuidOf("event:"+label), dig("envelope:"+label), quad("receipt:"+label))
			if err != nil {
				panic(err)
			}
			out = append(out, golden{receipt.KindActiveConsumerAck, label, a})
		}
	}
	out = append(out,
		golden{receipt.KindOperationsProjectionAppliedReceipt, "run_created", opsReceipt("golden-run")},
		golden{receipt.KindOperationsProjectionAppliedReceipt, "billing_finalization_committed", opsReceiptFor("golden-fin", "billing.finalization.committed@1", "1")},
	)
	out = append(out, meteringGoldens()...)
	out = append(out, finishedGoldens()...)
	out = append(out, blockedGoldens()...)
	out = append(out, evidenceGoldens()...)
	out = append(out,
		golden{receipt.KindBillingSettlementCatchUpWorkAttemptBlocked, "settlement_input_owner_conflict-0", catchUpBlocked("b0")},
		golden{receipt.KindBillingSettlementCatchUpWorkAttemptBlocked, "settlement_input_owner_conflict-1", catchUpBlocked("b11")},
	)
	out = append(out, coordinatorGoldens()...)
	out = append(out, catchUpGoldens()...)
	return out
}

func opsReceiptFor(label, eventType, schema string) *receipt.OperationsProjectionAppliedReceipt {
	ev := opsEvent(label)
	ev.EventType, ev.EventSchemaVersion = eventType, schema
	r, err := receipt.NewOperationsProjectionAppliedReceipt("opr-"+label, route.Required("operations_billing_view", 1), ev, at(2))
	if err != nil {
		panic(err)
	}
	return r
}
