package receipt

import (
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// Shape descriptions (package schema) of every object of this package. They
// render the generated JSON Schema and TypeScript declarations (package
// schemagen, CT-5); the tests decode every golden with them and check that
// every shape negative is rejected by them too, so they cannot drift from the
// decoders. The refinement rules (errors.go) are checked by the decoders and
// Validate, and are listed in docs/contracts/receipts.md.

var (
	anyText  = schema.Text{}
	anyUUID  = schema.UUID{}
	atTime   = schema.Timestamp{}
	positive = schema.Int{Min: 1}
	count    = schema.Int{Min: 0}
	anyInt   = schema.Int{Min: -jcs.MaxSafeInteger}
)

// quadFieldsOf describes a content-address quadruple as this package reads it
// (strict.Object.Quadruple): non-empty ref and schema version, a registered
// algorithm and a digest of its form.
func quadFieldsOf(prefix, doc string) []schema.Field {
	f := strict.Fields(prefix)
	return []schema.Field{
		{Name: f[0], Type: anyText, Doc: doc},
		{Name: f[1], Type: anyText},
		{Name: f[2], Type: schema.DigestAlgorithm{ValueField: f[3]}},
		{Name: f[3], Type: schema.DigestValue{AlgorithmField: f[2]}},
	}
}

// selfQuadFields describes an object's own quadruple (schema version 1).
func selfQuadFields(prefix, doc string) []schema.Field {
	q := quadFieldsOf(prefix, doc)
	q[1].Type = schema.SchemaVersion{Known: []string{SchemaVersion1}}
	return q
}

func lit(name, value string) []schema.Field {
	return schema.F(name, schema.Literal{Value: value}, "")
}

func enum(name string, values ...string) []schema.Field {
	return schema.F(name, schema.Enum{Values: values}, "")
}

func envelopeDigestFields() []schema.Field {
	return schema.DigestPairFields("eventEnvelopeDigestAlgorithmVersion", "eventEnvelopeSha256", "digest of the acknowledged event's envelope")
}

// headerFields describes Header: own quadruple, route literals, eventId and
// envelope digest.
func headerFields(prefix string, dest route.Destination) []schema.Field {
	b, _ := route.BindingOf(dest)
	return schema.Fields(
		selfQuadFields(prefix, "assigned by the owner's repository; excluded from the digest candidate"),
		schema.F("destination", schema.Literal{Value: string(dest), Err: ErrReceiptDestination}, ""),
		schema.F("consumerName", schema.Literal{Value: b.ConsumerName, Err: ErrReceiptConsumer}, ""),
		schema.F("eventId", anyUUID, "the acknowledged event"),
		envelopeDigestFields(),
	)
}

func tenantFields() []schema.Field {
	return schema.Fields(
		enum("tenantKind", TenantOrganization, TenantPersonal),
		schema.F("tenantId", anyUUID, ""),
		schema.F("workspaceId", anyUUID, ""),
		schema.Opt("projectId", anyUUID, ""),
	)
}

func uuids(names ...string) []schema.Field {
	var out []schema.Field
	for _, n := range names {
		out = append(out, schema.Field{Name: n, Type: anyUUID})
	}
	return out
}

func texts(names ...string) []schema.Field {
	var out []schema.Field
	for _, n := range names {
		out = append(out, schema.Field{Name: n, Type: anyText})
	}
	return out
}

func objectDef(name, doc string, fields ...[]schema.Field) *schema.Def {
	return &schema.Def{Name: name, Doc: doc, Type: schema.Object{Fields: schema.Fields(fields...)}}
}

func unionDef(name, doc, discriminator string, branches ...schema.Branch) *schema.Def {
	return &schema.Def{Name: name, Doc: doc, Type: schema.Union{Discriminator: discriminator, Branches: branches}}
}

func ref(name string, d *schema.Def) []schema.Field { return schema.F(name, schema.Ref{Def: d}, "") }

// guarded returns d with guards on its object or union.
func guarded(d *schema.Def, guards ...schema.Guard) *schema.Def {
	switch t := d.Type.(type) {
	case schema.Object:
		t.Guards = guards
		d.Type = t
	case schema.Union:
		t.Guards = guards
		d.Type = t
	}
	return d
}

func forbid(err error, names ...string) schema.Guard { return schema.Guard{Forbid: names, Err: err} }
func requireFields(err error, names ...string) schema.Guard {
	return schema.Guard{Require: names, Err: err}
}

// refOf is the ref field name of a quadruple prefix.
func refOf(prefix string) string { return strict.Fields(prefix)[0] }

var noCaseRef = forbid(ErrCaseRefForbidden, fieldCaseRef)

// --- shared parts ----------------------------------------------------------

func workFields(generationField string) []schema.Field {
	return schema.Fields(
		schema.F(generationField, positive, ""),
		texts("meteringInputWorkOperationId"),
		quadFieldsOf(prefixWork, "MeteringInputWork@1"),
	)
}

var snapshotItemDef = objectDef("SettlementInputSnapshotItemV1", "One settlement input snapshot of an applied work, sorted by (runStepId, executionAttemptId, chargeDimensionKey).",
	texts("runStepId", "executionAttemptId", "chargeDimensionKey"), quadFieldsOf("", "SettlementInputSnapshot@1"), schema.F("stateVersion", positive, ""))

func snapshotSetFields() []schema.Field {
	return schema.Fields(
		schema.F("settlementInputSnapshotCount", count, "equals the number of snapshots"),
		schema.F("settlementInputSnapshots", schema.Array{Items: schema.Ref{Def: snapshotItemDef}}, ""),
	)
}

// EconomicIdentityDef is SettlementEconomicIdentity@1 as this package reads it.
var EconomicIdentityDef = unionDef("ReceiptSettlementEconomicIdentityV1", "SettlementEconomicIdentity@1: credits | entitlement{entitlementKey, unit} | money{currency}.", "kind",
	schema.Branch{Value: EconomicCredits},
	schema.Branch{Value: EconomicEntitlement, Fields: texts("entitlementKey", "unit")},
	schema.Branch{Value: EconomicMoney, Fields: schema.F("currency", schema.CurrencyText, "ISO 4217 alphabetic code")},
)

var activeWorkDef = unionDef("MeteringActiveWorkV1", "The lane's active work: none, or the pending work.", "state",
	schema.Branch{Value: "none"},
	schema.Branch{Value: StatePending, Fields: workFields("workGeneration")},
)

var lastFinishedWorkDef = unionDef("MeteringLastFinishedWorkV1", "The lane's last finished work, if any.", "state",
	schema.Branch{Value: "none"},
	schema.Branch{Value: "available", Fields: schema.Fields(workFields("workGeneration"), quadFieldsOf(prefixWorkFinished, "MeteringInputWorkAttemptFinished@1"))},
)

func blockedFactFields() []schema.Field {
	return quadFieldsOf(prefixWorkBlocked, "MeteringInputWorkAttemptBlocked@1; a blocked state carries no finish, processing fact or case reference")
}

// blockedStateGuards: a blocked coordination state binds its blocked fact
// and never a finish or a processing fact.
var blockedStateGuards = []schema.Guard{
	forbid(ErrBlockedCarriesFinish, append(quadFields(prefixWorkFinished), "lastFinishedWork", "appliedWorkGeneration")...),
	forbid(ErrBlockedCarriesProcessing, append(quadFields(prefixProcessing), "processingOutcome")...),
	requireFields(ErrBlockedMissingFact, refOf(prefixWorkBlocked)),
}

// --- MeteringInputProcessorConsumerReceipt@1 -------------------------------

var meteringSourceDef = unionDef("MeteringReceiptSourceV1", "The event the receipt records.", "kind",
	schema.Branch{Value: SourceExecutionEligibility, Fields: schema.Fields(
		lit("eventType", EventExecutionAttemptEligibilityFinalized), lit("eventSchemaVersion", eventSchemaVersion1),
		tenantFields(),
		uuids("billingReservationId", "billingAccountId", "runId", "runStepId", "executionAttemptId"),
		quadFieldsOf(prefixAttemptManifest, "AttemptExecutionManifest"),
		quadFieldsOf(prefixEligibilityFact, "ExecutionEligibilityFact@1"),
	)},
	schema.Branch{Value: SourceGatewayAvailability, Fields: schema.Fields(
		lit("eventType", EventGatewayAvailabilityCurrentChanged), lit("eventSchemaVersion", eventSchemaVersion1),
		uuids("executionAttemptId"), texts("gatewayDeploymentId"),
		quadFieldsOf(prefixAttemptManifest, "AttemptExecutionManifest"),
		enum("providerEvidenceKind", EvidenceProviderUsage, EvidenceProviderCost),
		texts("evidenceDimensionKey"),
		quadFieldsOf(prefixCurrentAvailability, "current availability snapshot"),
		schema.F("currentAvailabilityStateVersion", positive, ""),
	)},
)

func eligibilityCoordinationDef() *schema.Def {
	waiting := schema.Fields(ref("activeWork", activeWorkDef), ref("lastFinishedWork", lastFinishedWorkDef))
	return guarded(unionDef("EligibilityCoordinationStateV1", "Coordination state of the eligibility_and_settlement_input lane.", "state",
		schema.Branch{Value: StateWaitingForExecution, Fields: waiting},
		schema.Branch{Value: StateWaitingForGatewayUsage, Fields: waiting},
		schema.Branch{Value: StatePending, Fields: ref("activeWork", activeWorkDef)},
		schema.Branch{Value: StateApplied, Fields: schema.Fields(ref("activeWork", activeWorkDef), workFields("appliedWorkGeneration"),
			quadFieldsOf(prefixWorkFinished, "MeteringInputWorkAttemptFinished@1"), snapshotSetFields())},
		schema.Branch{Value: StateBlockedOnOwnerConflict, Fields: schema.Fields(blockedFactFields(), ref("activeWork", activeWorkDef)), Guards: blockedStateGuards},
	), noCaseRef)
}

func providerCostCoordinationDef() *schema.Def {
	finished := schema.Fields(ref("activeWork", activeWorkDef), enum("processingOutcome", processingOutcomes...), workFields("workGeneration"),
		quadFieldsOf(prefixProcessing, "ProviderCostAvailabilityProcessing@1"), quadFieldsOf(prefixWorkFinished, "MeteringInputWorkAttemptFinished@1"))
	// A finished state binds its work, processing fact and finish.
	terminal := []schema.Guard{requireFields(ErrTerminalIncomplete, refOf(prefixProcessing), refOf(prefixWorkFinished))}
	return guarded(unionDef("ProviderCostCoordinationStateV1", "Coordination state of the provider_cost lane.", "state",
		schema.Branch{Value: StatePending, Fields: ref("activeWork", activeWorkDef)},
		schema.Branch{Value: StateAvailabilityProcessed, Fields: finished, Guards: terminal},
		schema.Branch{Value: StateWaitingForEvidence, Fields: finished, Guards: terminal},
		schema.Branch{Value: StateNoCostEvidence, Fields: finished, Guards: terminal},
		schema.Branch{Value: StateReconciliationRequired, Fields: schema.Fields(finished, enum("availabilityState", availabilityStates...), texts("stateReasonCode")), Guards: terminal},
		schema.Branch{Value: StateBlockedOnProcessingConflict, Fields: schema.Fields(blockedFactFields(), ref("activeWork", activeWorkDef)), Guards: blockedStateGuards},
	), noCaseRef)
}

var meteringLaneDef = guarded(unionDef("MeteringReceiptLaneV1", "The lane the event advanced and its coordination state.", "kind",
	schema.Branch{Value: LaneEligibility, Fields: schema.Fields(
		schema.F("eligibilityFenceRevision", positive, ""),
		schema.F("latestEligibilityWorkGeneration", count, "0 when the lane never scheduled work"),
		schema.DigestPairFields("eligibilityTriggerDigestAlgorithmVersion", "eligibilityTriggerDigest", ""),
		ref("coordinationState", eligibilityCoordinationDef()),
	)},
	schema.Branch{Value: LaneProviderCost, Fields: schema.Fields(
		texts("gatewayDeploymentId", "sourceEvidenceDimensionKey"),
		schema.F("providerCostFenceRevision", positive, ""),
		schema.F("latestProviderCostWorkGeneration", count, "0 when the lane never scheduled work"),
		schema.DigestPairFields("providerCostTriggerDigestAlgorithmVersion", "providerCostTriggerDigest", ""),
		ref("coordinationState", providerCostCoordinationDef()),
	)},
), noCaseRef)

// MeteringReceiptDef describes MeteringInputProcessorConsumerReceipt@1.
var MeteringReceiptDef = guarded(objectDef("MeteringInputProcessorConsumerReceiptV1", "MeteringInputProcessorConsumerReceipt@1: what the Metering input processor committed for one event.",
	headerFields(prefixMeteringReceipt, route.MeteringInputProcessor),
	ref("source", meteringSourceDef),
	enum("outcome", OutcomeAdvanced, OutcomeAlreadyObserved),
	ref("lane", meteringLaneDef),
	schema.F("committedAt", atTime, "excluded from the digest candidate"),
), noCaseRef)

// --- OperationsProjectionAppliedReceipt@1 ----------------------------------

// OperationsReceiptDef describes OperationsProjectionAppliedReceipt@1.
var OperationsReceiptDef = objectDef("OperationsProjectionAppliedReceiptV1", "OperationsProjectionAppliedReceipt@1: the Operations projector applied one event to its projection target.",
	headerFields(prefixOperationsReceipt, route.CoreOperations),
	texts("projectionName"),
	schema.F("projectionVersion", positive, ""),
	texts("eventType", "eventSchemaVersion"),
	schema.F("appliedAt", atTime, "excluded from the digest candidate"),
)

// --- BillingFinalizationCoordinatorConsumerReceipt@1 -----------------------

func finalizationWorkDesc() []schema.Field {
	return schema.Fields(
		schema.F("workGeneration", positive, ""),
		quadFieldsOf(prefixTriggerSnapshot, "Billing Finalization Trigger Snapshot"),
		quadFieldsOf(prefixFinalizationWork, "Billing Finalization Work"),
	)
}

var coordinatorSourceDef = unionDef("CoordinatorReceiptSourceV1", "The event the coordinator consumed.", "kind",
	schema.Branch{Value: CoordinatorSourceExecutionClosure, Fields: schema.Fields(
		lit("eventType", EventExecutionRunFinalizationClosed), lit("eventSchemaVersion", eventSchemaVersion1),
		tenantFields(),
		uuids("billingReservationId", "billingAccountId", "runId", "closureOperationId"),
		quadFieldsOf(prefixRunAdmissionManifest, "RunAdmissionManifest"),
		quadFieldsOf(prefixRunExecutionFinalization, "RunExecutionFinalizationFact@1"),
		schema.F("runExecutionFinalizationStateVersion", positive, ""),
		quadFieldsOf(prefixAttemptSetManifest, "RunAttemptSetManifest@1"),
		schema.F("attemptCount", count, ""),
	)},
	schema.Branch{Value: CoordinatorSourceResolution, Fields: schema.Fields(
		lit("eventType", EventFinalizationReconciliationResolutionApplied), lit("eventSchemaVersion", eventSchemaVersion1),
		tenantFields(),
		uuids("billingReservationId", "billingAccountId", "runId", "billingFinalizationFenceId"),
		texts(fieldCaseRef),
		schema.F("reconciliationGeneration", positive, ""),
		schema.F("resolutionRevision", anyInt, "always 1"),
		uuids("resolutionOperationId"),
		quadFieldsOf(prefixCaseIdentityReservation, "FinalizationReconciliationCaseIdentityReservation@1"),
		quadFieldsOf(prefixResolutionApplied, "FinalizationReconciliationResolutionApplied@1"),
		texts("actorWorkforcePrincipalId"),
		lit("action", ResolutionActionReevaluate),
	)},
)

var coordinatorOutcomeDef = unionDef("CoordinatorReceiptOutcomeV1", "What the coordinator did.", "state",
	schema.Branch{Value: CoordinatorWorkScheduled, Fields: schema.Fields(schema.F("finalizationFenceRevision", positive, ""), finalizationWorkDesc())},
	schema.Branch{Value: CoordinatorAlreadySuperseded, Fields: schema.F("finalizationFenceRevision", positive, "")},
)

// CoordinatorReceiptDef describes BillingFinalizationCoordinatorConsumerReceipt@1.
var CoordinatorReceiptDef = objectDef("BillingFinalizationCoordinatorConsumerReceiptV1", "BillingFinalizationCoordinatorConsumerReceipt@1: what the Billing finalization coordinator committed for one event.",
	headerFields(prefixCoordinatorReceipt, route.BillingFinalizationCoordinator),
	ref("source", coordinatorSourceDef),
	ref("outcome", coordinatorOutcomeDef),
	schema.F("committedAt", atTime, "excluded from the digest candidate"),
)

// --- BillingSettlementCatchUpConsumerReceipt@1 -----------------------------

var settlementInputDef = &schema.Def{Name: "SettlementInputRefV1", Doc: "A settlement input five-tuple: snapshot quadruple and state version.",
	Type: schema.Object{Fields: schema.Fields(quadFieldsOf(prefixSettlementInputSnapshot, "SettlementInputSnapshot@1"), schema.F("settlementInputStateVersion", positive, ""))}}

var durabilityDef = unionDef("CatchUpDurabilityV1", "How the advanced watermark was made durable.", "state",
	schema.Branch{Value: DurabilityFinalizationWorkScheduled, Fields: schema.Fields(schema.F("finalizationFenceRevision", positive, ""), finalizationWorkDesc()),
		Guards: []schema.Guard{forbid(ErrDurabilityMixed, append(append([]string{}, catchUpWorkFields...), heldFields...)...)}},
	schema.Branch{Value: DurabilitySettlementCatchUpScheduled, Guards: []schema.Guard{forbid(ErrDurabilityMixed, append(append([]string{}, finalizationWorkFields...), heldFields...)...)}, Fields: schema.Fields(
		schema.F("settlementCatchUpFenceRevision", positive, ""),
		schema.F("workGeneration", positive, ""),
		quadFieldsOf(prefixCatchUpWork, "Billing Settlement Catch-Up Work"),
		texts("billingCatchUpValidationOperationId"),
	)},
	schema.Branch{Value: DurabilityHeldForResolution, Doc: "no trigger, work, generation or catch-up operation", Guards: []schema.Guard{forbid(ErrHeldCarriesWork, heldForbidden...)}, Fields: schema.Fields(
		schema.F("finalizationFenceRevision", positive, ""),
		texts(fieldCaseRef),
		schema.F("reconciliationGeneration", positive, ""),
		schema.F("expectedResolutionRevision", anyInt, "always 1"),
	)},
)

var catchUpOutcomeDef = unionDef("CatchUpReceiptOutcomeV1", "What the catch-up consumer did.", "kind",
	schema.Branch{Value: CatchUpWatermarkAdvanced, Fields: schema.Fields(schema.F("inboxRevision", positive, ""), ref("durability", durabilityDef))},
	schema.Branch{Value: CatchUpAlreadyObserved, Fields: schema.Fields(schema.F("inboxRevision", positive, ""), ref("highestObservedSettlementInput", settlementInputDef))},
)

// CatchUpReceiptDef describes BillingSettlementCatchUpConsumerReceipt@1.
var CatchUpReceiptDef = objectDef("BillingSettlementCatchUpConsumerReceiptV1", "BillingSettlementCatchUpConsumerReceipt@1: what the Billing settlement catch-up consumer committed for one event.",
	headerFields(prefixCatchUpReceipt, route.BillingSettlementCatchUp),
	lit("eventType", EventSettlementInputCurrentChanged), lit("eventSchemaVersion", eventSchemaVersion1),
	tenantFields(),
	uuids("billingReservationId", "billingAccountId", "runId", "runStepId", "executionAttemptId"),
	texts("chargeDimensionKey"),
	ref("settlementEconomicIdentity", EconomicIdentityDef),
	ref("eventSettlementInput", settlementInputDef),
	ref("outcome", catchUpOutcomeDef),
	schema.F("committedAt", atTime, "excluded from the digest candidate"),
)

// --- work-attempt facts --------------------------------------------------

var workLaneDef = unionDef("MeteringInputWorkLaneV1", "MeteringInputWork@1.lane (our definition): the lane identity without coordination state.", "kind",
	schema.Branch{Value: LaneEligibility},
	schema.Branch{Value: LaneProviderCost, Fields: texts("gatewayDeploymentId", "sourceEvidenceDimensionKey")},
)

func workAttemptHeadFields() []schema.Field {
	return schema.Fields(
		quadFieldsOf(prefixWork, "MeteringInputWork@1"),
		texts("meteringInputWorkOperationId"),
		uuids("executionAttemptId"),
		schema.F("workGeneration", positive, ""),
		ref("lane", workLaneDef),
		schema.DigestPairFields("laneTriggerDigestAlgorithmVersion", "laneTriggerDigest", ""),
		schema.F("attemptNumber", positive, ""),
		texts("fencingToken"),
	)
}

// finishKind: a branch that exists for one lane kind only; another kind is a mixed union.
func finishKind(kind string) []schema.Field {
	return schema.F("kind", schema.Literal{Value: kind, Err: strict.ErrMixedUnion}, "")
}

var finishOutcomeDef = unionDef("MeteringWorkFinishOutcomeV1", "The finish outcome; kind is the work's lane kind.", "state",
	schema.Branch{Value: FinishWaitingForCounterpart, Fields: schema.Fields(finishKind(LaneEligibility), enum("waitingFor", WaitingForExecutionEligibility, WaitingForGatewayUsage))},
	schema.Branch{Value: FinishApplied, Fields: schema.Fields(finishKind(LaneEligibility), snapshotSetFields())},
	schema.Branch{Value: FinishAvailabilityProcessed, Fields: schema.Fields(finishKind(LaneProviderCost), quadFieldsOf(prefixProcessing, "ProviderCostAvailabilityProcessing@1"))},
	schema.Branch{Value: FinishSuperseded, Fields: schema.Fields(enum("kind", LaneEligibility, LaneProviderCost), schema.F("supersededByWorkGeneration", positive, "greater than workGeneration"))},
)

// WorkFinishedDef describes MeteringInputWorkAttemptFinished@1.
var WorkFinishedDef = objectDef("MeteringInputWorkAttemptFinishedV1", "MeteringInputWorkAttemptFinished@1: the one finish of a started work attempt.",
	selfQuadFields(prefixWorkFinished, "excluded from the digest candidate"),
	workAttemptHeadFields(),
	ref("outcome", finishOutcomeDef),
	schema.F("finishedAt", atTime, "excluded from the digest candidate"),
)

func blockingCauseDef(name, doc string, kinds []string, prefixes map[string]string) *schema.Def {
	branches := make([]schema.Branch, len(kinds))
	for i, k := range kinds {
		branches[i] = schema.Branch{Value: k, Fields: quadFieldsOf(prefixes[k], "")}
	}
	return unionDef(name, doc, "kind", branches...)
}

// blockedFactGuards: a blocked fact must not smuggle a finish, a processing
// fact or a case reference.
var blockedFactGuards = []schema.Guard{
	forbid(ErrBlockedCarriesFinish, append(quadFields(prefixWorkFinished), "finishedAt")...),
	forbid(ErrBlockedCarriesProcessing, append(quadFields(prefixProcessing), "processingOutcome")...),
	noCaseRef,
}

// WorkBlockedDef describes MeteringInputWorkAttemptBlocked@1.
var WorkBlockedDef = guarded(objectDef("MeteringInputWorkAttemptBlockedV1", "MeteringInputWorkAttemptBlocked@1: the non-terminal block of a work attempt (never a finish or an operations case).",
	selfQuadFields(prefixWorkBlocked, "excluded from the digest candidate"),
	workAttemptHeadFields(),
	ref("blockingCause", guarded(blockingCauseDef("MeteringWorkBlockingCauseV1", "The conflict fact or evidence that blocks the work; the lane limits the branches.",
		[]string{CauseExecutionEligibilityOwnerConflict, CauseGatewayUsageOwnerConflict, CauseGatewayBindingOwnerConflict, CauseEligibilityProcessingConflict, CauseProviderCostProcessingConflict},
		blockingCausePrefix), blockedFactGuards...)),
	schema.F("blockedAt", atTime, "excluded from the digest candidate"),
), blockedFactGuards...)

// catchUpBlockedGuards: the blocked fact is never a finish and never names a case.
var catchUpBlockedGuards = []schema.Guard{
	forbid(ErrBlockedCarriesFinish, append(quadFields(prefixCatchUpFinished), "finishedAt", "outcome")...),
	noCaseRef,
}

// CatchUpBlockedDef describes BillingSettlementCatchUpWorkAttemptBlocked@1.
var CatchUpBlockedDef = guarded(objectDef("BillingSettlementCatchUpWorkAttemptBlockedV1", "BillingSettlementCatchUpWorkAttemptBlocked@1: the catch-up worker's non-terminal block.",
	selfQuadFields(prefixCatchUpBlocked, "excluded from the digest candidate"),
	quadFieldsOf(prefixCatchUpWork, "Billing Settlement Catch-Up Work"),
	texts("billingCatchUpValidationOperationId"),
	uuids("billingReservationId", "billingAccountId", "runId", "runStepId", "executionAttemptId"),
	texts("chargeDimensionKey"),
	schema.F("workGeneration", positive, ""),
	schema.F("attemptNumber", positive, ""),
	texts("fencingToken"),
	ref("blockingCause", guarded(blockingCauseDef("CatchUpBlockingCauseV1", "The settlement input owner conflict that blocks the catch-up work.",
		[]string{CauseSettlementInputOwnerConflict}, map[string]string{CauseSettlementInputOwnerConflict: prefixSettlementInputConflictFact}), catchUpBlockedGuards...)),
	schema.F("blockedAt", atTime, "excluded from the digest candidate"),
), catchUpBlockedGuards...)

// --- conflict evidence -----------------------------------------------------

// EligibilityEvidenceDef describes EligibilityProcessingConflictEvidence@1.
var EligibilityEvidenceDef = objectDef("EligibilityProcessingConflictEvidenceV1", "EligibilityProcessingConflictEvidence@1: a proven local deterministic conflict while processing an eligibility work.",
	selfQuadFields(prefixEligibilityEvidence, "excluded from the digest candidate"),
	uuids("runId", "runStepId", "executionAttemptId"),
	quadFieldsOf(prefixAttemptManifest, "AttemptExecutionManifest"),
	quadFieldsOf(prefixEligibilityFact, "ExecutionEligibilityFact@1"),
	quadFieldsOf(prefixWork, "MeteringInputWork@1"),
	texts("meteringInputWorkOperationId"),
	schema.F("workGeneration", positive, ""),
	schema.DigestPairFields("laneTriggerDigestAlgorithmVersion", "laneTriggerDigest", ""),
	enum("validationStage", eligibilityValidationStages...),
	schema.DigestPairFields("conflictingCandidateDigestAlgorithmVersion", "conflictingCandidateDigest", ""),
	texts("reasonCode"),
	schema.F("observedAt", atTime, "excluded from the digest candidate"),
)

var costCauseDef = unionDef("ProviderCostConflictCauseV1", "The cause of a provider cost processing conflict.", "kind",
	schema.Branch{Value: CostCauseGatewayOwnerConflict, Fields: quadFieldsOf(costCausePrefix[CostCauseGatewayOwnerConflict], "")},
	schema.Branch{Value: CostCauseGatewayBindingOwnerConflict, Fields: quadFieldsOf(costCausePrefix[CostCauseGatewayBindingOwnerConflict], "")},
	schema.Branch{Value: CostCauseMeteringDeterministicValidation, Fields: schema.Fields(
		enum("validationStage", providerCostValidationStages...),
		schema.DigestPairFields("conflictingCandidateDigestAlgorithmVersion", "conflictingCandidateDigest", ""),
		texts("reasonCode"),
	)},
)

// ProviderCostEvidenceDef describes ProviderCostProcessingConflictEvidence@1.
var ProviderCostEvidenceDef = guarded(objectDef("ProviderCostProcessingConflictEvidenceV1", "ProviderCostProcessingConflictEvidence@1: a proven conflict while processing a provider cost work; deployment and source dimension are never trimmed.",
	selfQuadFields(prefixProviderCostEvidence, "excluded from the digest candidate"),
	quadFieldsOf(prefixWork, "MeteringInputWork@1"),
	texts("meteringInputWorkOperationId"),
	schema.F("workGeneration", positive, ""),
	uuids("runId", "runStepId", "executionAttemptId"),
	texts("gatewayDeploymentId", "sourceEvidenceDimensionKey"),
	quadFieldsOf(prefixAttemptManifest, "AttemptExecutionManifest"),
	quadFieldsOf("attemptRouteBinding", "AttemptRouteBinding"),
	quadFieldsOf("gatewayRouteSnapshot", "GatewayRouteSnapshot"),
	quadFieldsOf("costAvailability", "cost availability snapshot"),
	schema.F("costAvailabilityStateVersion", positive, ""),
	ref("cause", costCauseDef),
	schema.F("detectedAt", atTime, "excluded from the digest candidate"),
), requireFields(ErrCostEvidenceTrimmed, "gatewayDeploymentId", "sourceEvidenceDimensionKey"))

// --- ActiveConsumerAck@1 ---------------------------------------------------

func ackReceiptDef() *schema.Def {
	var branches []schema.Branch
	for _, kind := range []string{AckKindOperationsProjection, AckKindMeteringInputProcessor, AckKindBillingFinalizationCoordinator, AckKindBillingSettlementCatchUp} {
		branches = append(branches, schema.Branch{Value: kind, Fields: selfQuadFields(ackReceiptPrefix[kind], "the full quadruple of the owner's receipt")})
	}
	return unionDef("AckAppliedReceiptV1", "The receipt the ack names: the destination's own branch, never a free string.", "kind", branches...)
}

// AckDef describes ActiveConsumerAck@1.
var AckDef = objectDef("ActiveConsumerAckV1", "ActiveConsumerAck@1 (OB-DELIVER-3): a consumer's acknowledgement of one delivery; the consumer is the destination's one consumer.",
	enum("destination", destinationNames()...),
	texts("consumerName"),
	schema.F("eventId", anyUUID, ""),
	envelopeDigestFields(),
	ref("appliedReceipt", ackReceiptDef()),
)

// Definition is one object of this package with its shape description.
type Definition struct {
	Kind string
	Def  *schema.Def
}

// Definitions lists the shape description of every contract kind of this
// package, in the order of Contracts.
func Definitions() []Definition {
	return []Definition{
		{KindActiveConsumerAck, AckDef},
		{KindOperationsProjectionAppliedReceipt, OperationsReceiptDef},
		{KindMeteringInputProcessorConsumerReceipt, MeteringReceiptDef},
		{KindMeteringInputWorkAttemptFinished, WorkFinishedDef},
		{KindMeteringInputWorkAttemptBlocked, WorkBlockedDef},
		{KindEligibilityProcessingConflictEvidence, EligibilityEvidenceDef},
		{KindProviderCostProcessingConflictEvidence, ProviderCostEvidenceDef},
		{KindBillingSettlementCatchUpWorkAttemptBlocked, CatchUpBlockedDef},
		{KindBillingFinalizationCoordinatorConsumerReceipt, CoordinatorReceiptDef},
		{KindBillingSettlementCatchUpConsumerReceipt, CatchUpReceiptDef},
	}
}
