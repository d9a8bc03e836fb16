package receipt

import "errors"

// Refinement rules. Shape errors (unknown, missing or mistyped fields, unknown
// literals, mixed union branches, bare digests) wrap the strict/digest
// sentinels; every refinement rule the outbox document states on top of the
// shape wraps exactly one of the sentinels below. Both kinds arrive as a
// *strict.FieldError naming the JSON path. docs/contracts/receipts.md quotes
// the spec sentence of each rule.
var (
	// Every receipt.

	// ErrReceiptDestination: the receipt's destination is not its fixed literal.
	ErrReceiptDestination = errors.New("receipt: destination is not the receipt's fixed destination")
	// ErrReceiptConsumer: the receipt's consumerName is not its fixed literal.
	ErrReceiptConsumer = errors.New("receipt: consumerName is not the receipt's fixed consumer")

	// ActiveConsumerAck@1 (OB-DELIVER-1, OB-DELIVER-3).

	// ErrAckConsumer: the ack's consumerName is not the one consumer of its destination.
	ErrAckConsumer = errors.New("receipt: ack consumerName does not belong to its destination")
	// ErrAckBranch: appliedReceipt.kind is not the branch of the ack's destination.
	ErrAckBranch = errors.New("receipt: ack appliedReceipt branch does not match its destination")

	// MeteringInputProcessorConsumerReceipt@1 (MET).

	// ErrExecutionSourceLane: source.kind=execution_eligibility outside the eligibility lane.
	ErrExecutionSourceLane = errors.New("receipt: execution eligibility source must use lane eligibility_and_settlement_input")
	// ErrGatewayUsageLane: a provider_usage gateway source outside the eligibility lane.
	ErrGatewayUsageLane = errors.New("receipt: gateway usage source must use lane eligibility_and_settlement_input")
	// ErrGatewayCostLane: a provider_cost gateway source outside the provider cost lane.
	ErrGatewayCostLane = errors.New("receipt: gateway cost source must use lane provider_cost")
	// ErrCostLaneIdentity: provider cost lane deployment/dimension differ from the source's.
	ErrCostLaneIdentity = errors.New("receipt: provider cost lane gatewayDeploymentId/sourceEvidenceDimensionKey differ from the source")
	// ErrWaitingForOwnSource: a waiting state waits for the very source the receipt records.
	ErrWaitingForOwnSource = errors.New("receipt: waiting state waits for the source kind this receipt records")
	// ErrActiveWorkNotNone: a waiting, applied or finished state with activeWork other than none.
	ErrActiveWorkNotNone = errors.New("receipt: coordination state requires activeWork={state=none}")
	// ErrActiveWorkNotPending: a pending or blocked state without a pending activeWork.
	ErrActiveWorkNotPending = errors.New("receipt: coordination state requires activeWork={state=pending}")
	// ErrGenerationNotLatest: the bound work generation is not the lane's latest generation.
	ErrGenerationNotLatest = errors.New("receipt: bound work generation is not the lane's latest work generation")
	// ErrSnapshotsNotSorted: settlementInputSnapshots[] not strictly ascending by (runStepId, executionAttemptId, chargeDimensionKey).
	ErrSnapshotsNotSorted = errors.New("receipt: settlementInputSnapshots[] not sorted or has duplicates")
	// ErrSnapshotCount: settlementInputSnapshotCount differs from the array length.
	ErrSnapshotCount = errors.New("receipt: settlementInputSnapshotCount differs from the number of snapshots")
	// ErrSnapshotAttempt: a settlement snapshot belongs to another run step or attempt.
	ErrSnapshotAttempt = errors.New("receipt: settlement snapshot belongs to another run step or execution attempt")
	// ErrBlockedMissingFact: a blocked state without the MeteringInputWorkAttemptBlocked@1 quadruple.
	ErrBlockedMissingFact = errors.New("receipt: blocked state without its MeteringInputWorkAttemptBlocked@1 quadruple")
	// ErrBlockedCarriesFinish: a blocked state or fact carrying a work finish.
	ErrBlockedCarriesFinish = errors.New("receipt: blocked state or fact carries a work finish")
	// ErrBlockedCarriesProcessing: a blocked state or fact carrying a processing fact.
	ErrBlockedCarriesProcessing = errors.New("receipt: blocked state or fact carries a processing fact")
	// ErrCaseRefForbidden: a reconciliationCaseRef where the spec forbids any case reference.
	ErrCaseRefForbidden = errors.New("receipt: reconciliation case reference is forbidden here")
	// ErrTerminalIncomplete: a provider cost finished state without its processing fact or finish.
	ErrTerminalIncomplete = errors.New("receipt: provider cost finished state must bind work, processing fact and finish")
	// ErrProcessingOutcome: processingOutcome is not the one fixed by the coordination state.
	ErrProcessingOutcome = errors.New("receipt: processingOutcome does not match the coordination state")
	// ErrReconciliationNotConflicting: reconciliation_required with an availabilityState other than conflicting.
	ErrReconciliationNotConflicting = errors.New("receipt: reconciliation_required requires availabilityState=conflicting")

	// MeteringInputWorkAttemptFinished@1 / Blocked@1 and the conflict evidences (MET).

	// ErrOutcomeLane: a finish outcome kind that is not the work's lane kind.
	ErrOutcomeLane = errors.New("receipt: finish outcome kind differs from the work lane kind")
	// ErrSupersededGeneration: supersededByWorkGeneration not greater than the finished generation.
	ErrSupersededGeneration = errors.New("receipt: supersededByWorkGeneration must be greater than workGeneration")
	// ErrBlockingCauseLane: a blockingCause branch the work's lane does not allow.
	ErrBlockingCauseLane = errors.New("receipt: blockingCause branch not allowed for the work lane")
	// ErrCostEvidenceTrimmed: provider cost conflict evidence without its deployment or source dimension.
	ErrCostEvidenceTrimmed = errors.New("receipt: provider cost conflict evidence must keep gatewayDeploymentId and sourceEvidenceDimensionKey")

	// BillingFinalizationCoordinatorConsumerReceipt@1 (BFC).

	// ErrClosureNotWorkScheduled: source=execution_closure with an outcome other than work_scheduled.
	ErrClosureNotWorkScheduled = errors.New("receipt: source execution_closure requires outcome work_scheduled")
	// ErrSupersededNotResolution: outcome=already_superseded for a source other than the resolution.
	ErrSupersededNotResolution = errors.New("receipt: outcome already_superseded is only for source finalization_reconciliation_resolution")
	// ErrResolutionRevisionNotOne: resolutionRevision / expectedResolutionRevision other than 1.
	ErrResolutionRevisionNotOne = errors.New("receipt: resolution revision must be 1")

	// BillingSettlementCatchUpConsumerReceipt@1 (BSC).

	// ErrHeldCarriesWork: held_for_resolution carrying a trigger, work, generation or catch-up operation.
	ErrHeldCarriesWork = errors.New("receipt: held_for_resolution must not carry trigger, work, generation or catch-up operation")
	// ErrDurabilityMixed: a scheduled durability branch carrying another branch's fields.
	ErrDurabilityMixed = errors.New("receipt: durability branch carries fields of another durability branch")
	// ErrAlreadyObservedRegression: highestObservedSettlementInput.stateVersion < eventSettlementInput.stateVersion.
	ErrAlreadyObservedRegression = errors.New("receipt: already_observed requires highestObservedSettlementInput.stateVersion >= eventSettlementInput.stateVersion")
	// ErrSameRevisionDifferentSnapshot: equal state versions bound to different snapshot quadruples.
	ErrSameRevisionDifferentSnapshot = errors.New("receipt: same settlement input state version with a different snapshot")
)
