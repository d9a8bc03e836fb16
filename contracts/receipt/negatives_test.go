package receipt_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/strict"
)

// negative is one rule violation: a valid golden (the positive case), a
// mutation that breaks exactly one rule, the requirement it proves and the
// sentinel the rejection must wrap. The mutated document is resealed (its
// digest recomputes) unless keepDigest, so the only failure is the rule.
type negative struct {
	kind       string
	name       string
	base       string // golden name of the same kind
	req        string // requirement ID / spec object
	want       error
	mutate     func(m map[string]any)
	keepDigest bool
}

// sentinels names every reason a negative artefact may expect.
func sentinels() map[string]error {
	return map[string]error{
		"receipt.ErrReceiptDestination":            receipt.ErrReceiptDestination,
		"receipt.ErrReceiptConsumer":               receipt.ErrReceiptConsumer,
		"receipt.ErrAckConsumer":                   receipt.ErrAckConsumer,
		"receipt.ErrAckBranch":                     receipt.ErrAckBranch,
		"receipt.ErrExecutionSourceLane":           receipt.ErrExecutionSourceLane,
		"receipt.ErrGatewayUsageLane":              receipt.ErrGatewayUsageLane,
		"receipt.ErrGatewayCostLane":               receipt.ErrGatewayCostLane,
		"receipt.ErrCostLaneIdentity":              receipt.ErrCostLaneIdentity,
		"receipt.ErrWaitingForOwnSource":           receipt.ErrWaitingForOwnSource,
		"receipt.ErrActiveWorkNotNone":             receipt.ErrActiveWorkNotNone,
		"receipt.ErrActiveWorkNotPending":          receipt.ErrActiveWorkNotPending,
		"receipt.ErrGenerationNotLatest":           receipt.ErrGenerationNotLatest,
		"receipt.ErrSnapshotsNotSorted":            receipt.ErrSnapshotsNotSorted,
		"receipt.ErrSnapshotCount":                 receipt.ErrSnapshotCount,
		"receipt.ErrSnapshotAttempt":               receipt.ErrSnapshotAttempt,
		"receipt.ErrBlockedMissingFact":            receipt.ErrBlockedMissingFact,
		"receipt.ErrBlockedCarriesFinish":          receipt.ErrBlockedCarriesFinish,
		"receipt.ErrBlockedCarriesProcessing":      receipt.ErrBlockedCarriesProcessing,
		"receipt.ErrCaseRefForbidden":              receipt.ErrCaseRefForbidden,
		"receipt.ErrTerminalIncomplete":            receipt.ErrTerminalIncomplete,
		"receipt.ErrProcessingOutcome":             receipt.ErrProcessingOutcome,
		"receipt.ErrReconciliationNotConflicting":  receipt.ErrReconciliationNotConflicting,
		"receipt.ErrOutcomeLane":                   receipt.ErrOutcomeLane,
		"receipt.ErrSupersededGeneration":          receipt.ErrSupersededGeneration,
		"receipt.ErrBlockingCauseLane":             receipt.ErrBlockingCauseLane,
		"receipt.ErrCostEvidenceTrimmed":           receipt.ErrCostEvidenceTrimmed,
		"receipt.ErrClosureNotWorkScheduled":       receipt.ErrClosureNotWorkScheduled,
		"receipt.ErrSupersededNotResolution":       receipt.ErrSupersededNotResolution,
		"receipt.ErrResolutionRevisionNotOne":      receipt.ErrResolutionRevisionNotOne,
		"receipt.ErrHeldCarriesWork":               receipt.ErrHeldCarriesWork,
		"receipt.ErrDurabilityMixed":               receipt.ErrDurabilityMixed,
		"receipt.ErrAlreadyObservedRegression":     receipt.ErrAlreadyObservedRegression,
		"receipt.ErrSameRevisionDifferentSnapshot": receipt.ErrSameRevisionDifferentSnapshot,
		"strict.ErrUnknownField":                   strict.ErrUnknownField,
		"strict.ErrMissingField":                   strict.ErrMissingField,
		"strict.ErrNotObject":                      strict.ErrNotObject,
		"strict.ErrUnknownEnum":                    strict.ErrUnknownEnum,
		"strict.ErrUnexpectedLiteral":              strict.ErrUnexpectedLiteral,
		"strict.ErrUnknownSchemaVersion":           strict.ErrUnknownSchemaVersion,
		"strict.ErrMixedUnion":                     strict.ErrMixedUnion,
		"strict.ErrInvalidValue":                   strict.ErrInvalidValue,
		"strict.ErrInvalidUUID":                    strict.ErrInvalidUUID,
		"strict.ErrOutOfRange":                     strict.ErrOutOfRange,
		"digest.ErrMissingAlgorithm":               digest.ErrMissingAlgorithm,
		"digest.ErrUnknownAlgorithm":               digest.ErrUnknownAlgorithm,
		"digest.ErrMismatch":                       digest.ErrMismatch,
	}
}

func sentinelName(t *testing.T, err error) string {
	t.Helper()
	for name, s := range sentinels() {
		if errors.Is(s, err) && errors.Is(err, s) {
			return name
		}
	}
	t.Fatalf("sentinel %v has no name in sentinels()", err)
	return ""
}

func putQuad(m map[string]any, prefix, label string) map[string]any {
	quad(label).Put(m, prefix)
	return m
}

func delQuad(m map[string]any, prefix string) {
	for _, f := range strict.Fields(prefix) {
		delete(m, f)
	}
}

func goldenJSON(kind, name string) map[string]any {
	for _, g := range allGoldens() {
		if g.kind == kind && g.name == name {
			return g.obj.ToJSON()
		}
	}
	panic("no golden " + kind + "/" + name)
}

func coord(m map[string]any) map[string]any { return path(m, "lane", "coordinationState") }

func snapshotsOf(m map[string]any) []any {
	return coord(m)["settlementInputSnapshots"].([]any)
}

const (
	kAck   = receipt.KindActiveConsumerAck
	kOps   = receipt.KindOperationsProjectionAppliedReceipt
	kMet   = receipt.KindMeteringInputProcessorConsumerReceipt
	kFin   = receipt.KindMeteringInputWorkAttemptFinished
	kBlk   = receipt.KindMeteringInputWorkAttemptBlocked
	kEEv   = receipt.KindEligibilityProcessingConflictEvidence
	kPEv   = receipt.KindProviderCostProcessingConflictEvidence
	kCUBlk = receipt.KindBillingSettlementCatchUpWorkAttemptBlocked
	kBFC   = receipt.KindBillingFinalizationCoordinatorConsumerReceipt
	kBSC   = receipt.KindBillingSettlementCatchUpConsumerReceipt
)

// Golden names used as bases.
const (
	execPending    = "execution-pending-exec-a"
	execApplied    = "execution-applied-exec-a"
	execBlocked    = "execution-blocked_on_owner_conflict-exec-a"
	execWaiting    = "execution-waiting_for_gateway_usage-available-exec-a"
	usagePending   = "gateway-usage-pending-usage-a"
	usageWaiting   = "gateway-usage-waiting_for_execution-none-usage-a"
	costPending    = "gateway-cost-pending-cost-a"
	costProcessed  = "gateway-cost-availability_processed-cost-a"
	costWaitingEv  = "gateway-cost-waiting_for_evidence-cost-a"
	costNoCost     = "gateway-cost-no_cost_evidence-cost-a"
	costBlocked    = "gateway-cost-blocked_on_processing_conflict-cost-a"
	costReconcile  = "gateway-cost-reconciliation_required-cost-a"
	bfcClosure     = "execution_closure-work_scheduled-c1"
	bfcResolution  = "resolution-work_scheduled-c1"
	bfcSuperseded  = "resolution-already_superseded-c1"
	bscFinWork     = "finalization_work_scheduled-credits"
	bscCatchUp     = "settlement_catch_up_scheduled-entitlement"
	bscHeld        = "held_for_resolution-money"
	bscObserved    = "already_observed-5"
	bscObservedEq  = "already_observed-2"
	finApplied     = "applied-1"
	finSuperseded  = "superseded-eligibility"
	blkCost        = "provider_cost_processing_conflict-0"
	blkEligibility = "eligibility_processing_conflict-0"
)

func negatives() []negative {
	return []negative{
		// ActiveConsumerAck@1 — OB-DELIVER-1/3, CT-2.
		{kAck, "branch-not-destination", "metering_input_processor-0", "OB-DELIVER-3", receipt.ErrAckBranch, func(m map[string]any) {
			m["appliedReceipt"] = goldenJSON(kAck, "billing_settlement_catch_up-0")["appliedReceipt"]
		}, false},
		{kAck, "consumer-not-destination", "core_operations-0", "OB-DELIVER-1", receipt.ErrAckConsumer, func(m map[string]any) {
			m["consumerName"] = "metering_input_processor_consumer"
		}, false},
		{kAck, "free-string-receipt", "core_operations-1", "OB-DELIVER-3", strict.ErrNotObject, func(m map[string]any) {
			m["appliedReceipt"] = "200 OK"
		}, false},
		{kAck, "missing-receipt-quadruple", "billing_finalization_coordinator-0", "OB-DELIVER-3", strict.ErrMissingField, func(m map[string]any) {
			m["appliedReceipt"] = map[string]any{"kind": receipt.AckKindBillingFinalizationCoordinator}
		}, false},
		{kAck, "bare-envelope-digest", "billing_settlement_catch_up-1", "CT-3", digest.ErrMissingAlgorithm, func(m map[string]any) {
			delete(m, "eventEnvelopeDigestAlgorithmVersion")
		}, false},

		// OperationsProjectionAppliedReceipt@1.
		{kOps, "destination-not-core_operations", "run_created", "OperationsProjectionAppliedReceipt@1", receipt.ErrReceiptDestination, func(m map[string]any) {
			m["destination"] = "billing_finalization_coordinator"
		}, false},
		{kOps, "consumer-not-operations_projector", "run_created", "OperationsProjectionAppliedReceipt@1", receipt.ErrReceiptConsumer, func(m map[string]any) {
			m["consumerName"] = "billing_finalization_coordinator_consumer"
		}, false},
		{kOps, "digest-covers-projection", "billing_finalization_committed", "CT-3", digest.ErrMismatch, func(m map[string]any) {
			m["projectionVersion"] = int64(9)
		}, true},
		{kOps, "unknown-schema-version", "run_created", "CT-2", strict.ErrUnknownSchemaVersion, func(m map[string]any) {
			m["operationsProjectionAppliedReceiptSchemaVersion"] = "2"
		}, false},

		// MeteringInputProcessorConsumerReceipt@1 — MET.
		{kMet, "execution-source-provider-cost-lane", execPending, "MET: Execution Source只允许lane.kind=eligibility_and_settlement_input", receipt.ErrExecutionSourceLane, func(m map[string]any) {
			m["lane"] = goldenJSON(kMet, costPending)["lane"]
		}, false},
		{kMet, "gateway-usage-provider-cost-lane", usagePending, "MET: Gateway Usage Source同样只进入Eligibility Lane", receipt.ErrGatewayUsageLane, func(m map[string]any) {
			m["lane"] = goldenJSON(kMet, costPending)["lane"]
		}, false},
		{kMet, "gateway-cost-eligibility-lane", costPending, "MET: Gateway Cost Source只进入Provider Cost Lane", receipt.ErrGatewayCostLane, func(m map[string]any) {
			m["lane"] = goldenJSON(kMet, usagePending)["lane"]
		}, false},
		{kMet, "cost-lane-other-deployment", costPending, "MET: 与gatewayDeploymentId + sourceEvidenceDimensionKey相等的Provider Cost Lane", receipt.ErrCostLaneIdentity, func(m map[string]any) {
			path(m, "lane")["gatewayDeploymentId"] = "gw-deploy-other"
		}, false},
		{kMet, "cost-lane-other-dimension", costProcessed, "MET: 与gatewayDeploymentId + sourceEvidenceDimensionKey相等的Provider Cost Lane", receipt.ErrCostLaneIdentity, func(m map[string]any) {
			path(m, "lane")["sourceEvidenceDimensionKey"] = "tokens.input"
		}, false},
		{kMet, "execution-waits-for-execution", execWaiting, "MET: Gateway-bound Eligibility可以等待Gateway Usage", receipt.ErrWaitingForOwnSource, func(m map[string]any) {
			coord(m)["state"] = receipt.StateWaitingForExecution
		}, false},
		{kMet, "usage-waits-for-usage", usageWaiting, "MET: Gateway Usage可以等待Execution Eligibility", receipt.ErrWaitingForOwnSource, func(m map[string]any) {
			coord(m)["state"] = receipt.StateWaitingForGatewayUsage
		}, false},
		{kMet, "waiting-with-pending-active-work", execWaiting, "MET: waiting_*只允许activeWork=none", receipt.ErrActiveWorkNotNone, func(m map[string]any) {
			coord(m)["activeWork"] = path(goldenJSON(kMet, execPending), "lane", "coordinationState")["activeWork"]
		}, false},
		{kMet, "applied-with-pending-active-work", execApplied, "MET: applied activeWork={state=none}", receipt.ErrActiveWorkNotNone, func(m map[string]any) {
			a := path(goldenJSON(kMet, execPending), "lane", "coordinationState")["activeWork"].(map[string]any)
			a["workGeneration"] = int64(1)
			coord(m)["activeWork"] = a
		}, false},
		{kMet, "cost-finished-with-pending-active-work", costNoCost, "MET: Provider Cost完成分支activeWork={state=none}", receipt.ErrActiveWorkNotNone, func(m map[string]any) {
			coord(m)["activeWork"] = path(goldenJSON(kMet, costPending), "lane", "coordinationState")["activeWork"]
		}, false},
		{kMet, "pending-without-active-work", execPending, "MET: coordinationState=pending必须且只能绑定本Lane最新Generation的Active Work", receipt.ErrActiveWorkNotPending, func(m map[string]any) {
			coord(m)["activeWork"] = map[string]any{"state": "none"}
		}, false},
		{kMet, "blocked-without-active-work", costBlocked, "MET: blocked绑定相同activeWork.state=pending", receipt.ErrActiveWorkNotPending, func(m map[string]any) {
			coord(m)["activeWork"] = map[string]any{"state": "none"}
		}, false},
		{kMet, "pending-not-latest-generation", execPending, "MET: pending必须且只能绑定本Lane最新Generation", receipt.ErrGenerationNotLatest, func(m map[string]any) {
			path(m, "lane")["latestEligibilityWorkGeneration"] = int64(3)
		}, false},
		{kMet, "applied-old-generation", execApplied, "MET: 旧Work/Blocked/Finish/Processing Fact不得完成新Head", receipt.ErrGenerationNotLatest, func(m map[string]any) {
			path(m, "lane")["latestEligibilityWorkGeneration"] = int64(2)
		}, false},
		{kMet, "cost-finished-old-generation", costReconcile, "MET: 旧Work/Blocked/Finish/Processing Fact不得完成新Head", receipt.ErrGenerationNotLatest, func(m map[string]any) {
			path(m, "lane")["latestProviderCostWorkGeneration"] = int64(4)
		}, false},
		{kMet, "applied-snapshots-unsorted", execApplied, "MET: applied严格排序的Settlement Snapshot集", receipt.ErrSnapshotsNotSorted, func(m map[string]any) {
			s := snapshotsOf(m)
			s[0], s[1] = s[1], s[0]
		}, false},
		{kMet, "applied-snapshots-duplicate", execApplied, "MET: applied严格排序的Settlement Snapshot集", receipt.ErrSnapshotsNotSorted, func(m map[string]any) {
			s := snapshotsOf(m)
			s[1] = clone(s[0])
		}, false},
		{kMet, "applied-snapshot-count", execApplied, "MET: Count相等", receipt.ErrSnapshotCount, func(m map[string]any) {
			coord(m)["settlementInputSnapshotCount"] = int64(2)
		}, false},
		{kMet, "applied-snapshot-other-attempt", execApplied, "MET: 跨Manifest/Attempt/Kind/Dimension联合混合均拒绝", receipt.ErrSnapshotAttempt, func(m map[string]any) {
			for _, s := range snapshotsOf(m) {
				s.(map[string]any)["executionAttemptId"] = uuidOf("attempt:other")
			}
		}, false},
		{kMet, "blocked-without-blocked-fact", execBlocked, "MET: 绑定MeteringInputWorkAttemptBlocked@1完整四元组", receipt.ErrBlockedMissingFact, func(m map[string]any) {
			delQuad(coord(m), "meteringInputWorkAttemptBlocked")
		}, false},
		{kMet, "blocked-with-finish", execBlocked, "MET: 绝不绑定Case或Finished", receipt.ErrBlockedCarriesFinish, func(m map[string]any) {
			putQuad(coord(m), "meteringInputWorkAttemptFinished", "finish")
		}, false},
		{kMet, "cost-blocked-with-finish", costBlocked, "MET: Blocked夹带Finish", receipt.ErrBlockedCarriesFinish, func(m map[string]any) {
			putQuad(coord(m), "meteringInputWorkAttemptFinished", "finish")
		}, false},
		{kMet, "cost-blocked-with-processing", costBlocked, "MET: Blocked夹带Finish/Processing", receipt.ErrBlockedCarriesProcessing, func(m map[string]any) {
			putQuad(coord(m), "providerCostAvailabilityProcessing", "processing")
		}, false},
		{kMet, "blocked-with-case-ref", execBlocked, "MET: 绝不绑定Case", receipt.ErrCaseRefForbidden, func(m map[string]any) {
			coord(m)["reconciliationCaseRef"] = "case-1"
		}, false},
		{kMet, "reconciliation-with-case-ref", costReconcile, "MET: 任何reconciliationCaseRef", receipt.ErrCaseRefForbidden, func(m map[string]any) {
			coord(m)["reconciliationCaseRef"] = "case-1"
		}, false},
		{kMet, "finished-without-processing", costProcessed, "MET: 终态缺Processing/Finish", receipt.ErrTerminalIncomplete, func(m map[string]any) {
			delQuad(coord(m), "providerCostAvailabilityProcessing")
		}, false},
		{kMet, "finished-without-finish", costWaitingEv, "MET: 终态缺Processing/Finish", receipt.ErrTerminalIncomplete, func(m map[string]any) {
			delQuad(coord(m), "meteringInputWorkAttemptFinished")
		}, false},
		{kMet, "processing-outcome-not-state", costWaitingEv, "MET: pending固定waiting_for_evidence", receipt.ErrProcessingOutcome, func(m map[string]any) {
			coord(m)["processingOutcome"] = receipt.ProcessingAvailableApplied
		}, false},
		{kMet, "no-cost-outcome-not-state", costNoCost, "MET: not_reported|unavailable固定no_cost_evidence", receipt.ErrProcessingOutcome, func(m map[string]any) {
			coord(m)["processingOutcome"] = receipt.ProcessingWaitingForEvidence
		}, false},
		{kMet, "reconciliation-not-conflicting", costReconcile, "MET: 仅Gateway Availability.state=conflicting允许的reconciliation_required", receipt.ErrReconciliationNotConflicting, func(m map[string]any) {
			coord(m)["availabilityState"] = receipt.AvailabilityUnavailable
		}, false},
		{kMet, "eligibility-lane-with-cost-revision", execPending, "MET: Eligibility与Provider Cost两种Revision/Trigger/Generation禁止混用", strict.ErrMixedUnion, func(m map[string]any) {
			path(m, "lane")["providerCostFenceRevision"] = int64(1)
		}, false},
		{kMet, "mixed-state-fields", execPending, "CT-2", strict.ErrMixedUnion, func(m map[string]any) {
			coord(m)["settlementInputSnapshotCount"] = int64(0)
		}, false},
		{kMet, "source-event-type-alias", execPending, "CT-2", strict.ErrUnexpectedLiteral, func(m map[string]any) {
			path(m, "source")["eventType"] = "execution.attempt-eligibility.finalized"
		}, false},
		{kMet, "unknown-coordination-state", execPending, "CT-2", strict.ErrUnknownEnum, func(m map[string]any) {
			coord(m)["state"] = "done"
		}, false},
		{kMet, "bare-trigger-digest", execPending, "CT-3", digest.ErrMissingAlgorithm, func(m map[string]any) {
			delete(path(m, "lane"), "eligibilityTriggerDigestAlgorithmVersion")
		}, false},
		{kMet, "digest-does-not-recompute", costReconcile, "CT-3", digest.ErrMismatch, func(m map[string]any) {
			coord(m)["stateReasonCode"] = "other_reason"
		}, true},
		{kMet, "destination-literal", execPending, "MeteringInputProcessorConsumerReceipt@1", receipt.ErrReceiptDestination, func(m map[string]any) {
			m["destination"] = "core_operations"
		}, false},

		// MeteringInputWorkAttemptFinished@1 — MET.
		{kFin, "outcome-kind-not-lane", finApplied, "MET: lane = MeteringInputWork@1.lane", receipt.ErrOutcomeLane, func(m map[string]any) {
			m["lane"] = goldenJSON(kFin, "superseded-provider_cost")["lane"]
		}, false},
		{kFin, "superseded-by-same-generation", finSuperseded, "MET: supersededByWorkGeneration", receipt.ErrSupersededGeneration, func(m map[string]any) {
			path(m, "outcome")["supersededByWorkGeneration"] = int64(2)
		}, false},
		{kFin, "applied-snapshots-unsorted", finApplied, "MET: settlementInputSnapshots[] = sorted", receipt.ErrSnapshotsNotSorted, func(m map[string]any) {
			s := path(m, "outcome")["settlementInputSnapshots"].([]any)
			s[0], s[2] = s[2], s[0]
		}, false},
		{kFin, "applied-snapshot-count", finApplied, "MET: settlementInputSnapshotCount", receipt.ErrSnapshotCount, func(m map[string]any) {
			path(m, "outcome")["settlementInputSnapshotCount"] = int64(4)
		}, false},
		{kFin, "applied-snapshot-other-attempt", "applied-0", "MET: 跨Attempt混合拒绝", receipt.ErrSnapshotAttempt, func(m map[string]any) {
			path(m, "outcome")["settlementInputSnapshots"].([]any)[0].(map[string]any)["executionAttemptId"] = uuidOf("attempt:other")
		}, false},
		{kFin, "applied-on-provider-cost-kind", finApplied, "CT-2", strict.ErrMixedUnion, func(m map[string]any) {
			path(m, "outcome")["kind"] = receipt.LaneProviderCost
		}, false},

		// MeteringInputWorkAttemptBlocked@1 — MET.
		{kBlk, "cost-lane-owner-branch", blkCost, "MET: Provider Cost Lane只允许外层provider_cost_processing_conflict", receipt.ErrBlockingCauseLane, func(m map[string]any) {
			m["lane"] = goldenJSON(kBlk, blkEligibility)["lane"]
		}, false},
		{kBlk, "eligibility-lane-cost-branch", blkEligibility, "MET: Eligibility Lane只允许Execution/Gateway Evidence/Gateway Binding直接Owner分支或Eligibility Processing", receipt.ErrBlockingCauseLane, func(m map[string]any) {
			m["lane"] = goldenJSON(kBlk, blkCost)["lane"]
		}, false},
		{kBlk, "carries-finish", blkEligibility, "MET: 禁止夹带Finished", receipt.ErrBlockedCarriesFinish, func(m map[string]any) {
			putQuad(m, "meteringInputWorkAttemptFinished", "finish")
		}, false},
		{kBlk, "carries-processing", blkCost, "MET: 禁止夹带Processing Fact", receipt.ErrBlockedCarriesProcessing, func(m map[string]any) {
			putQuad(m, "providerCostAvailabilityProcessing", "processing")
		}, false},
		{kBlk, "carries-case-ref", blkCost, "MET: 禁止夹带Case Ref", receipt.ErrCaseRefForbidden, func(m map[string]any) {
			path(m, "blockingCause")["reconciliationCaseRef"] = "case-1"
		}, false},

		// Conflict evidences — MET.
		{kEEv, "unknown-validation-stage", "meter_event", "MET: 拒绝未知Stage", strict.ErrUnknownEnum, func(m map[string]any) {
			m["validationStage"] = "provider_cost_mapping"
		}, false},
		{kEEv, "digest-does-not-recompute", "settlement_input", "MET: 拒绝Conflict Evidence错摘要", digest.ErrMismatch, func(m map[string]any) {
			m["reasonCode"] = "other"
		}, true},
		{kPEv, "deployment-trimmed", "gateway_owner_conflict-0", "MET: Deployment/Source Dimension不可裁剪", receipt.ErrCostEvidenceTrimmed, func(m map[string]any) {
			delete(m, "gatewayDeploymentId")
		}, false},
		{kPEv, "dimension-trimmed", "metering_deterministic_validation-provider_cost_mapping", "MET: Deployment/Source Dimension不可裁剪", receipt.ErrCostEvidenceTrimmed, func(m map[string]any) {
			delete(m, "sourceEvidenceDimensionKey")
		}, false},
		{kPEv, "bare-candidate-digest", "metering_deterministic_validation-route_validation_receipt", "MET: 本地校验分支必须冻结冲突Candidate带算法摘要", digest.ErrMissingAlgorithm, func(m map[string]any) {
			delete(path(m, "cause"), "conflictingCandidateDigestAlgorithmVersion")
		}, false},
		{kPEv, "unknown-validation-stage", "metering_deterministic_validation-provider_cost_mapping", "MET: 拒绝未知Stage", strict.ErrUnknownEnum, func(m map[string]any) {
			path(m, "cause")["validationStage"] = "meter_event"
		}, false},
		{kPEv, "owner-branch-with-stage", "gateway_binding_owner_conflict-1", "CT-2", strict.ErrMixedUnion, func(m map[string]any) {
			path(m, "cause")["validationStage"] = "source_schema"
		}, false},

		// BillingSettlementCatchUpWorkAttemptBlocked@1 — BSC.
		{kCUBlk, "carries-finish", "settlement_input_owner_conflict-0", "BSC: 绝不等同于BillingSettlementCatchUpWorkAttemptFinished@1", receipt.ErrBlockedCarriesFinish, func(m map[string]any) {
			putQuad(m, "billingSettlementCatchUpWorkAttemptFinished", "finish")
		}, false},
		{kCUBlk, "carries-case-ref", "settlement_input_owner_conflict-1", "BSC: 禁止Finished/Fence终态/Case", receipt.ErrCaseRefForbidden, func(m map[string]any) {
			m["reconciliationCaseRef"] = "case-1"
		}, false},
		{kCUBlk, "unknown-cause", "settlement_input_owner_conflict-0", "CT-2", strict.ErrUnknownEnum, func(m map[string]any) {
			path(m, "blockingCause")["kind"] = "settlement_input_unavailable"
		}, false},

		// BillingFinalizationCoordinatorConsumerReceipt@1 — BFC.
		{kBFC, "closure-already-superseded", bfcClosure, "BFC: source=execution_closure必须且只能搭配outcome=work_scheduled", receipt.ErrClosureNotWorkScheduled, func(m map[string]any) {
			m["outcome"] = goldenJSON(kBFC, bfcSuperseded)["outcome"]
		}, false},
		{kBFC, "already-superseded-for-closure", "execution_closure-work_scheduled-c22", "BFC: 只有同一Resolution...才允许already_superseded", receipt.ErrSupersededNotResolution, func(m map[string]any) {
			m["outcome"] = map[string]any{"state": receipt.CoordinatorAlreadySuperseded, "finalizationFenceRevision": int64(2)}
		}, false},
		{kBFC, "resolution-revision-not-one", bfcResolution, "BFC: resolutionRevision=1", receipt.ErrResolutionRevisionNotOne, func(m map[string]any) {
			path(m, "source")["resolutionRevision"] = int64(2)
		}, false},
		{kBFC, "resolution-action-literal", bfcSuperseded, "BFC: action=reevaluate_current_owner_state", strict.ErrUnexpectedLiteral, func(m map[string]any) {
			path(m, "source")["action"] = "force_settle"
		}, false},
		{kBFC, "superseded-with-work", bfcSuperseded, "BFC: Source/Outcome分支混合", strict.ErrMixedUnion, func(m map[string]any) {
			putQuad(path(m, "outcome"), "billingFinalizationWork", "work")
		}, false},
		{kBFC, "consumer-literal", bfcClosure, "BillingFinalizationCoordinatorConsumerReceipt@1", receipt.ErrReceiptConsumer, func(m map[string]any) {
			m["consumerName"] = "billing_settlement_catch_up_consumer"
		}, false},

		// BillingSettlementCatchUpConsumerReceipt@1 — BSC.
		{kBSC, "held-with-work-generation", bscHeld, "BSC: held_for_resolution严格禁止Trigger/Work/Generation/Catch-up Operation", receipt.ErrHeldCarriesWork, func(m map[string]any) {
			path(m, "outcome", "durability")["workGeneration"] = int64(2)
		}, false},
		{kBSC, "held-with-trigger", bscHeld, "BSC: held_for_resolution严格禁止Trigger", receipt.ErrHeldCarriesWork, func(m map[string]any) {
			putQuad(path(m, "outcome", "durability"), "billingFinalizationTriggerSnapshot", "trigger")
		}, false},
		{kBSC, "held-with-work", "held_for_resolution-entitlement", "BSC: held_for_resolution严格禁止Work", receipt.ErrHeldCarriesWork, func(m map[string]any) {
			putQuad(path(m, "outcome", "durability"), "billingFinalizationWork", "work")
		}, false},
		{kBSC, "held-with-catch-up-operation", bscHeld, "BSC: held_for_resolution严格禁止Catch-up Operation", receipt.ErrHeldCarriesWork, func(m map[string]any) {
			path(m, "outcome", "durability")["billingCatchUpValidationOperationId"] = uuidOf("op")
		}, false},
		{kBSC, "finalization-work-with-catch-up-fields", bscFinWork, "BSC: 分支混合不得Ack", receipt.ErrDurabilityMixed, func(m map[string]any) {
			path(m, "outcome", "durability")["billingCatchUpValidationOperationId"] = uuidOf("op")
		}, false},
		{kBSC, "catch-up-with-finalization-fields", bscCatchUp, "BSC: 分支混合不得Ack", receipt.ErrDurabilityMixed, func(m map[string]any) {
			putQuad(path(m, "outcome", "durability"), "billingFinalizationTriggerSnapshot", "trigger")
		}, false},
		{kBSC, "already-observed-below-event", bscObserved, "BSC: highestObservedSettlementInput.stateVersion >= eventSettlementInput.stateVersion", receipt.ErrAlreadyObservedRegression, func(m map[string]any) {
			path(m, "outcome", "highestObservedSettlementInput")["settlementInputStateVersion"] = int64(1)
		}, false},
		{kBSC, "already-observed-same-revision-other-snapshot", bscObservedEq, "BSC: 同Revision异Snapshot摘要都不得Ack", receipt.ErrSameRevisionDifferentSnapshot, func(m map[string]any) {
			path(m, "outcome", "highestObservedSettlementInput")["settlementInputSnapshotDigest"] = hexOf("other snapshot")
		}, false},
		{kBSC, "expected-resolution-revision-not-one", bscHeld, "BSC: expectedResolutionRevision=1", receipt.ErrResolutionRevisionNotOne, func(m map[string]any) {
			path(m, "outcome", "durability")["expectedResolutionRevision"] = int64(2)
		}, false},
		{kBSC, "event-type-literal", bscFinWork, "BSC: eventType=metering.settlement-input.current-changed@1", strict.ErrUnexpectedLiteral, func(m map[string]any) {
			m["eventType"] = "metering.settlement-input.current-changed@2"
		}, false},
		{kBSC, "economic-identity-currency", "held_for_resolution-money", "SettlementEconomicIdentity@1 (our definition)", strict.ErrInvalidValue, func(m map[string]any) {
			path(m, "settlementEconomicIdentity")["currency"] = "eur"
		}, false},
		{kBSC, "economic-identity-mixed", bscFinWork, "SettlementEconomicIdentity@1 (our definition)", strict.ErrMixedUnion, func(m map[string]any) {
			path(m, "settlementEconomicIdentity")["currency"] = "EUR"
		}, false},
		{kBSC, "digest-does-not-recompute", bscCatchUp, "CT-3", digest.ErrMismatch, func(m map[string]any) {
			m["chargeDimensionKey"] = "tokens.input"
		}, true},
	}
}

// Every refinement sentinel of the package has at least one negative artefact.
func TestNegative_CoversEveryRule(t *testing.T) {
	t.Parallel()
	covered := map[error]bool{}
	for _, n := range negatives() {
		covered[n.want] = true
	}
	for name, s := range sentinels() {
		if len(name) > 8 && name[:8] == "receipt." {
			if !covered[s] {
				t.Errorf("refinement rule %s has no negative artefact", name)
			}
		}
	}
}

// reqID is the requirement or spec object a negative proves ("MET", "BFC",
// "BSC", "CT-2", "OB-DELIVER-3", "OperationsProjectionAppliedReceipt@1", ...).
func (n negative) reqID() string {
	id := n.req
	for i, r := range id {
		if r == ':' || r == ' ' {
			return id[:i]
		}
	}
	return id
}

// Every rule, positive and negative, named by its requirement: the base
// golden satisfies the rule; the one mutation breaks it with the rule's own
// sentinel (in memory; TestNegative_CT4 checks the committed artefacts).
func TestRules_PositiveAndNegative(t *testing.T) {
	t.Parallel()
	for _, n := range negatives() {
		c := contractByName(t, n.kind)
		t.Run(n.reqID()+"/"+n.kind+"/"+n.name, func(t *testing.T) {
			t.Parallel()
			base := goldenJSON(n.kind, n.base)
			t.Run("positive", func(t *testing.T) {
				require.NoError(t, c.Validate(mustMarshal(base)), n.req)
			})
			t.Run("negative", func(t *testing.T) {
				m := clone(base).(map[string]any)
				n.mutate(m)
				if self, ok := receipt.SelfAddressing(n.kind); ok && !n.keepDigest {
					dg, err := self.Compute(digest.JCSSHA256V1, m)
					require.NoError(t, err)
					m[self.Prefix+"Digest"] = dg.Value
				}
				require.ErrorIs(t, c.Validate(mustMarshal(m)), n.want, n.req)
			})
		})
	}
}
