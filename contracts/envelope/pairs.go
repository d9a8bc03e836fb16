package envelope

import (
	"fmt"
	"sort"

	"github.com/oceanway/core/contracts/schema"
)

// Producer boundaries (fact databases) that append each pair.
const (
	ProducerCore      = "core"
	ProducerExecution = "execution"
	ProducerGateway   = "gateway"
	ProducerMetering  = "metering"
)

// Event type literals of the first full release (DS-7). They are exact: no
// prefix, wildcard, alias or "latest" resolves to them.
const (
	RunCreatedV2                            = "run.created@2.0"
	WalletReservedV2                        = "wallet.reserved@2.0"
	BillingFinalizationCommittedV1          = "billing.finalization.committed@1"
	BillingSettlementTransitionCommittedV1  = "billing.settlement-transition.committed@1"
	BillingLateExposureCaseRequestedV1      = "billing.late-settlement-exposure.case-requested@1"
	BillingCaseResolutionAppliedV1          = "billing.case-resolution.applied@1"
	BillingLateCommandResultCommittedV1     = "billing.late-settlement-command-result.committed@1"
	ExecutionAttemptEligibilityFinalizedV1  = "execution.attempt-eligibility.finalized@1"
	ExecutionRunFinalizationClosedV1        = "execution.run-finalization.closed@1"
	BillingFinalizationCaseRequestedV1      = "billing.finalization-reconciliation.case-requested@1"
	BillingFinalizationResolutionAppliedV1  = "billing.finalization-reconciliation-resolution.applied@1"
	GatewayAvailabilityCurrentChangedV1     = "gateway.evidence-availability.current-changed@1"
	MeteringSettlementInputCurrentChangedV1 = "metering.settlement-input.current-changed@1"
)

// Aggregate types.
const (
	AggregateRun                           = "run"
	AggregateBillingReservation            = "billing_reservation"
	AggregateBillingSettlementDimension    = "billing_settlement_dimension"
	AggregateBillingLateSettlementExposure = "billing_late_settlement_exposure"
	AggregateExecutionAttempt              = "execution_attempt"
	AggregateFinalizationCaseRequest       = "billing_finalization_reconciliation_case_request"
	AggregateFinalizationResolution        = "billing_finalization_reconciliation_resolution"
	AggregateGatewayAvailabilityChain      = "gateway_evidence_availability_chain"
	AggregateSettlementInputDimension      = "settlement_input_dimension"
)

// EventPair is one exact (eventType, eventSchemaVersion) pair the contracts
// support: its strict payload description, its aggregate rule and its
// refinement rules.
type EventPair struct {
	EventType          string
	EventSchemaVersion string
	Producer           string // fact boundary that appends it
	AggregateType      string
	// AggregateRule documents how aggregateId and aggregateRevision follow
	// from the payload; aggregate computes them.
	AggregateRule string
	Payload       *schema.Def
	// CausationRequired makes causationId mandatory for the pair.
	CausationRequired bool
	// ActorField names the payload field the envelope actor must equal; the
	// actor is then mandatory. Empty: the actor is optional.
	ActorField string
	// OwnDefinition is true when the outbox and ADR-031 documents do not list
	// the payload's fields and the payload is this project's definition
	// (docs/contracts/envelope.md).
	OwnDefinition bool

	aggregate func(p map[string]any) (id string, revision int64)
	refine    func(p map[string]any) *ruleViolation
}

type ruleViolation struct {
	field  string
	err    error
	detail string
}

// Key returns the pair's registry key "eventType|eventSchemaVersion".
func (p *EventPair) Key() string { return p.EventType + "|" + p.EventSchemaVersion }

// ExpectedAggregate returns the aggregateId and aggregateRevision the pair's
// rule derives from a decoded payload.
func (p *EventPair) ExpectedAggregate(payload map[string]any) (string, int64) {
	return p.aggregate(payload)
}

// --- shared payload building blocks ------------------------------------

var (
	uuid = schema.UUID{}
	pos  = schema.Int{Min: 1}
)

func ids(names ...string) []schema.Field {
	var out []schema.Field
	for _, n := range names {
		out = append(out, schema.Field{Name: n, Type: uuid})
	}
	return out
}

// EconomicIdentityDef is SettlementEconomicIdentity@1: credits |
// entitlement{entitlementKey, unit} | money{currency}.
var EconomicIdentityDef = &schema.Def{
	Name: "SettlementEconomicIdentityV1",
	Doc:  "SettlementEconomicIdentity@1: the strict economic identity of an amount (credits | entitlement{entitlementKey,unit} | money{currency}).",
	Type: schema.Union{Discriminator: "kind", Branches: []schema.Branch{
		{Value: "credits"},
		{Value: "entitlement", Fields: schema.Fields(schema.F("entitlementKey", schema.KeyText, ""), schema.F("unit", schema.KeyText, ""))},
		{Value: "money", Fields: schema.F("currency", schema.CurrencyText, "ISO 4217 alphabetic code")},
	}},
}

// SettlementInputPredecessorDef is the direct predecessor five-tuple of a
// settlement input snapshot, or none for the first state version.
var SettlementInputPredecessorDef = &schema.Def{
	Name: "SettlementInputPredecessorV1",
	Doc:  "The direct predecessor SettlementInputSnapshot@1 five-tuple (none for state version 1).",
	Type: schema.Union{Discriminator: "state", Branches: []schema.Branch{
		{Value: "none"},
		{Value: "present", Fields: schema.Fields(schema.Quad("settlementInputSnapshot", "predecessor snapshot"), schema.F("settlementInputStateVersion", pos, ""))},
	}},
}

// FinalizationCasePredecessorDef is the direct predecessor case identity of a
// finalization reconciliation case request (none for generation 1).
var FinalizationCasePredecessorDef = &schema.Def{
	Name: "FinalizationCasePredecessorV1",
	Doc:  "The direct predecessor Finalization reconciliation case identity (none for generation 1).",
	Type: schema.Union{Discriminator: "state", Branches: []schema.Branch{
		{Value: "none"},
		{Value: "present", Fields: schema.Fields(
			schema.F("predecessorReconciliationCaseRef", schema.RefText, ""),
			schema.F("predecessorReconciliationGeneration", pos, ""),
			schema.Quad("predecessorFinalizationCaseIdentityReservation", "FinalizationReconciliationCaseIdentityReservation@1 of the predecessor"),
		)},
	}},
}

// AvailableEvidenceDef references the Gateway evidence an availability
// current points at, if any.
var AvailableEvidenceDef = &schema.Def{
	Name: "GatewayAvailableEvidenceV1",
	Doc:  "The available provider evidence the current availability references, or none.",
	Type: schema.Union{Discriminator: "state", Branches: []schema.Branch{
		{Value: "none"},
		{Value: "present", Fields: schema.Quad("providerEvidence", "immutable Gateway provider evidence")},
	}},
}

func dimensionFields() []schema.Field {
	return schema.Fields(
		ids("billingReservationId", "billingAccountId", "runId", "runStepId", "executionAttemptId"),
		schema.F("chargeDimensionKey", schema.KeyText, "registered charge dimension key"),
		schema.F("settlementDimensionId", uuid, "Contracts-deterministic Settlement Dimension ID (derivation settlement_dimension@1)"),
		schema.F("settlementEconomicIdentity", schema.Ref{Def: EconomicIdentityDef}, ""),
	)
}

func payloadDef(name, doc string, fields ...[]schema.Field) *schema.Def {
	return &schema.Def{Name: name, Doc: doc, Type: schema.Object{Fields: schema.Fields(fields...)}}
}

// --- accessors on decoded payloads ---------------------------------------

func str(p map[string]any, k string) string { s, _ := p[k].(string); return s }
func num(p map[string]any, k string) int64  { n, _ := p[k].(int64); return n }
func obj(p map[string]any, k string) map[string]any {
	m, _ := p[k].(map[string]any)
	return m
}

func byID(field string) func(map[string]any) (string, int64) {
	return func(p map[string]any) (string, int64) { return str(p, field), 1 }
}

func checkDimension(p map[string]any) *ruleViolation {
	want := SettlementDimensionID(str(p, "billingReservationId"), str(p, "runId"), str(p, "runStepId"), str(p, "executionAttemptId"), str(p, "chargeDimensionKey"))
	if got := str(p, "settlementDimensionId"); got != want {
		return &ruleViolation{"settlementDimensionId", ErrDerivedIDMismatch, fmt.Sprintf("%s does not recompute (want %s)", got, want)}
	}
	return nil
}

func checkStep(p map[string]any) *ruleViolation {
	from, to := num(p, "fromSettlementStateRevision"), num(p, "toSettlementStateRevision")
	if to != from+1 {
		return &ruleViolation{"toSettlementStateRevision", ErrPayloadRule, fmt.Sprintf("toSettlementStateRevision %d must be fromSettlementStateRevision %d + 1", to, from)}
	}
	return nil
}

func positiveAmount(field string) func(map[string]any) *ruleViolation {
	return func(p map[string]any) *ruleViolation {
		if str(p, field) == "0" {
			return &ruleViolation{field, ErrPayloadRule, "amount must be positive"}
		}
		return nil
	}
}

func all(rules ...func(map[string]any) *ruleViolation) func(map[string]any) *ruleViolation {
	return func(p map[string]any) *ruleViolation {
		for _, r := range rules {
			if v := r(p); v != nil {
				return v
			}
		}
		return nil
	}
}

// --- the registry -------------------------------------------------------

var pairs = sortPairs([]*EventPair{
	{
		EventType: RunCreatedV2, EventSchemaVersion: "2.0", Producer: ProducerCore,
		AggregateType: AggregateRun, AggregateRule: "aggregateId = payload.runId; aggregateRevision = 1",
		OwnDefinition: true,
		Payload: payloadDef("RunCreatedV2_0Payload", "run.created@2.0: a Run was admitted with its Run Admission Manifest and linked Reservation.",
			ids("runId", "billingAccountId", "billingReservationId"),
			schema.Quad("runAdmissionManifest", "RunAdmissionManifest quadruple; equality with the Run is guaranteed by the Admission producer"),
		),
		aggregate: byID("runId"),
	},
	{
		EventType: WalletReservedV2, EventSchemaVersion: "2.0", Producer: ProducerCore,
		AggregateType: AggregateBillingReservation, AggregateRule: "aggregateId = payload.billingReservationId; aggregateRevision = 1",
		OwnDefinition: true,
		Payload: payloadDef("WalletReservedV2_0Payload", "wallet.reserved@2.0: a Billing Reservation was created for a Run at admission.",
			ids("billingReservationId", "billingAccountId", "runId"),
			schema.Quad("runAdmissionManifest", "RunAdmissionManifest quadruple the reservation was admitted with"),
			schema.F("reservationEconomicIdentity", schema.Ref{Def: EconomicIdentityDef}, ""),
			schema.F("reservedAmount", schema.AmountText, "reserved amount, canonical decimal text"),
		),
		aggregate: byID("billingReservationId"),
	},
	{
		EventType: BillingFinalizationCommittedV1, EventSchemaVersion: "1", Producer: ProducerCore,
		AggregateType: AggregateBillingReservation, AggregateRule: "aggregateId = payload.billingReservationId; aggregateRevision = 2 (wallet.reserved@2.0 is revision 1; success is absorbing)",
		OwnDefinition: true,
		Payload: payloadDef("BillingFinalizationCommittedV1Payload", "billing.finalization.committed@1: the absorbing successful Billing Finalization (BillingFinalizationCommitted@1).",
			ids("billingReservationId", "billingAccountId", "runId", "billingFinalizationFenceId", "billingFinalizationOperationId"),
			schema.F("finalizationFenceRevision", pos, "Finalization Fence revision at commit"),
			schema.Quad("billingFinalizationCommitted", "BillingFinalizationCommitted@1; Operations verifies it with readBillingFinalizationCommitted"),
			schema.F("billingFinalizationDecision", schema.Enum{Values: []string{"settle_and_release_remainder", "release_all"}}, ""),
			schema.F("reservationEconomicIdentity", schema.Ref{Def: EconomicIdentityDef}, ""),
			schema.F("settledAmount", schema.AmountText, ""),
			schema.F("releasedAmount", schema.AmountText, ""),
		),
		aggregate: func(p map[string]any) (string, int64) { return str(p, "billingReservationId"), 2 },
		refine: func(p map[string]any) *ruleViolation {
			if str(p, "billingFinalizationDecision") == "release_all" && str(p, "settledAmount") != "0" {
				return &ruleViolation{"settledAmount", ErrPayloadRule, "release_all settles nothing"}
			}
			return nil
		},
	},
	{
		EventType: BillingSettlementTransitionCommittedV1, EventSchemaVersion: "1", Producer: ProducerCore,
		AggregateType: AggregateBillingSettlementDimension, AggregateRule: "aggregateId = payload.settlementDimensionId; aggregateRevision = payload.fromSettlementStateRevision (the successful Finalization establishes state revision 1)",
		CausationRequired: true, OwnDefinition: true,
		Payload: payloadDef("BillingSettlementTransitionCommittedV1Payload", "billing.settlement-transition.committed@1: an append-only post-finalization settlement transition of one dimension.",
			dimensionFields(),
			schema.Quad("billingSettlementTransition", "BillingSettlementTransition owner fact"),
			schema.F("transitionKind", schema.Enum{Values: []string{"refund", "adjustment", "late_settlement_exposure"}}, ""),
			schema.F("transitionAmount", schema.AmountText, "absolute amount of the transition"),
			schema.F("fromSettlementStateRevision", pos, ""),
			schema.F("toSettlementStateRevision", schema.Int{Min: 2}, "fromSettlementStateRevision + 1"),
			ids("logicalOperationId"),
			schema.DigestPairFields("settlementBasisDigestAlgorithmVersion", "settlementBasisDigest", "digest of the full transition basis"),
			schema.F("validationOperationId", uuid, "derivation billing_settlement_transition_validation_operation@1"),
		),
		aggregate: func(p map[string]any) (string, int64) {
			return str(p, "settlementDimensionId"), num(p, "fromSettlementStateRevision")
		},
		refine: all(checkDimension, checkStep, func(p map[string]any) *ruleViolation {
			want := SettlementTransitionValidationOperationID(str(p, "logicalOperationId"), str(p, "billingReservationId"), str(p, "runStepId"), str(p, "executionAttemptId"), str(p, "chargeDimensionKey"), num(p, "fromSettlementStateRevision"), str(p, "settlementBasisDigestAlgorithmVersion"), str(p, "settlementBasisDigest"))
			if got := str(p, "validationOperationId"); got != want {
				return &ruleViolation{"validationOperationId", ErrDerivedIDMismatch, fmt.Sprintf("%s does not recompute (want %s)", got, want)}
			}
			return nil
		}),
	},
	{
		EventType: BillingLateExposureCaseRequestedV1, EventSchemaVersion: "1", Producer: ProducerCore,
		AggregateType: AggregateBillingLateSettlementExposure, AggregateRule: "aggregateId = payload.lateSettlementExposureId; aggregateRevision = 1",
		CausationRequired: true, OwnDefinition: true,
		Payload: payloadDef("BillingLateSettlementExposureCaseRequestedV1Payload", "billing.late-settlement-exposure.case-requested@1: a LateSettlementExposure@1 asks Operations to open (or join) a reconciliation case.",
			dimensionFields(),
			ids("lateSettlementExposureId"),
			schema.Quad("lateSettlementExposure", "LateSettlementExposure@1"),
			schema.F("reconciliationCaseRef", schema.RefText, "Case Ref reserved with Operations"),
			schema.F("caseGeneration", pos, ""),
			schema.Quad("lateSettlementCaseIdentityReservation", "case identity reservation"),
			ids("caseRequestOperationId"),
			schema.F("exposureAmount", schema.AmountText, "positive difference not charged automatically"),
		),
		aggregate: byID("lateSettlementExposureId"),
		refine:    all(checkDimension, positiveAmount("exposureAmount")),
	},
	{
		EventType: BillingCaseResolutionAppliedV1, EventSchemaVersion: "1", Producer: ProducerCore,
		AggregateType: AggregateBillingLateSettlementExposure, AggregateRule: "aggregateId = payload.lateSettlementExposureId; aggregateRevision = 2",
		CausationRequired: true, OwnDefinition: true,
		Payload: payloadDef("BillingCaseResolutionAppliedV1Payload", "billing.case-resolution.applied@1: Billing resolved a late settlement exposure (BillingCaseResolutionApplied@1); Operations closes the case.",
			dimensionFields(),
			ids("lateSettlementExposureId"),
			schema.F("reconciliationCaseRef", schema.RefText, ""),
			schema.F("caseGeneration", pos, ""),
			schema.Quad("lateSettlementCaseIdentityReservation", ""),
			schema.Quad("billingCaseResolutionApplied", "BillingCaseResolutionApplied@1"),
			schema.F("resolutionSource", schema.Enum{Values: []string{"settlement_transition", "late_settlement_command"}}, ""),
			ids("resolutionOperationId"),
		),
		aggregate: func(p map[string]any) (string, int64) { return str(p, "lateSettlementExposureId"), 2 },
		refine:    checkDimension,
	},
	{
		EventType: BillingLateCommandResultCommittedV1, EventSchemaVersion: "1", Producer: ProducerCore,
		AggregateType: AggregateBillingSettlementDimension, AggregateRule: "aggregateId = payload.settlementDimensionId; aggregateRevision = payload.fromSettlementStateRevision",
		CausationRequired: true, ActorField: "actorWorkforcePrincipalId", OwnDefinition: true,
		Payload: payloadDef("BillingLateSettlementCommandResultCommittedV1Payload", "billing.late-settlement-command-result.committed@1: a granted late settlement command adjusted one dimension (LateSettlementCommandResult@1).",
			dimensionFields(),
			ids("lateSettlementExposureId"),
			schema.F("reconciliationCaseRef", schema.RefText, ""),
			schema.F("caseGeneration", pos, ""),
			schema.Quad("lateSettlementCaseIdentityReservation", ""),
			schema.Quad("lateSettlementCommandResult", "LateSettlementCommandResult@1"),
			ids("lateSettlementCommandOperationId"),
			schema.F("fromSettlementStateRevision", pos, ""),
			schema.F("toSettlementStateRevision", schema.Int{Min: 2}, "fromSettlementStateRevision + 1"),
			schema.F("adjustmentAmount", schema.AmountText, "post-release adjustment amount"),
			schema.F("actorWorkforcePrincipalId", schema.PrincipalText, "equals the envelope actor"),
		),
		aggregate: func(p map[string]any) (string, int64) {
			return str(p, "settlementDimensionId"), num(p, "fromSettlementStateRevision")
		},
		refine: all(checkDimension, checkStep),
	},
	{
		EventType: ExecutionAttemptEligibilityFinalizedV1, EventSchemaVersion: "1", Producer: ProducerExecution,
		AggregateType: AggregateExecutionAttempt, AggregateRule: "aggregateId = payload.executionAttemptId; aggregateRevision = 1 (ExecutionEligibilityFact@1 is unique per attempt)",
		Payload: payloadDef("ExecutionAttemptEligibilityFinalizedV1Payload", "execution.attempt-eligibility.finalized@1 (AttemptEligibilityFinalized@1): the unique ExecutionEligibilityFact@1 of an attempt.",
			ids("billingReservationId", "billingAccountId", "runId", "runStepId", "executionAttemptId"),
			schema.Quad("attemptExecutionManifest", "AttemptExecutionManifest"),
			schema.Quad("executionEligibilityFact", "ExecutionEligibilityFact@1"),
		),
		aggregate: byID("executionAttemptId"),
	},
	{
		EventType: ExecutionRunFinalizationClosedV1, EventSchemaVersion: "1", Producer: ProducerExecution,
		AggregateType: AggregateRun, AggregateRule: "aggregateId = payload.runId; aggregateRevision = 1 (a second closure event for a run is rejected)",
		Payload: payloadDef("ExecutionRunFinalizationClosedV1Payload", "execution.run-finalization.closed@1 (RunFinalizationClosed@1): the irreversible closure of a Run's attempt set.",
			ids("billingReservationId", "billingAccountId", "runId", "closureOperationId"),
			schema.Quad("runAdmissionManifest", "RunAdmissionManifest"),
			schema.Quad("runExecutionFinalization", "RunExecutionFinalizationFact@1"),
			schema.F("runExecutionFinalizationStateVersion", pos, ""),
			schema.Quad("attemptSetManifest", "RunAttemptSetManifest@1"),
			schema.F("attemptCount", schema.Int{Min: 0}, "0 for an empty attempt set"),
		),
		aggregate: byID("runId"),
	},
	{
		EventType: BillingFinalizationCaseRequestedV1, EventSchemaVersion: "1", Producer: ProducerCore,
		AggregateType: AggregateFinalizationCaseRequest, AggregateRule: "aggregateId = FinalizationCaseRequestAggregateID(billingFinalizationFenceId, reconciliationGeneration); aggregateRevision = 1",
		Payload: payloadDef("BillingFinalizationReconciliationCaseRequestedV1Payload", "billing.finalization-reconciliation.case-requested@1: Billing entered reconciliation_required and asks Operations to create the pre-reserved case.",
			ids("billingReservationId", "billingAccountId", "runId", "billingFinalizationFenceId"),
			schema.F("reconciliationCaseRef", schema.RefText, "pre-reserved Case Ref"),
			schema.F("reconciliationGeneration", pos, ""),
			schema.F("expectedResolutionRevision", schema.Int{Min: 1, Max: 1}, "always 1"),
			ids("caseRequestOperationId"),
			schema.Quad("finalizationCaseIdentityReservation", "FinalizationReconciliationCaseIdentityReservation@1"),
			schema.Quad("billingFinalizationDecision", "BillingFinalizationDecision (reconciliation_required)"),
			schema.Quad("triggeringBillingFinalizationWork", "the winning Billing Finalization Work"),
			schema.F("triggeringBillingFinalizationWorkGeneration", pos, ""),
			ids("billingFinalizationOperationId"),
			schema.F("reconciliationReasonCode", schema.CodeText, ""),
			schema.F("predecessorCase", schema.Ref{Def: FinalizationCasePredecessorDef}, ""),
		),
		aggregate: func(p map[string]any) (string, int64) {
			return FinalizationCaseRequestAggregateID(str(p, "billingFinalizationFenceId"), num(p, "reconciliationGeneration")), 1
		},
		refine: func(p map[string]any) *ruleViolation {
			gen, pred := num(p, "reconciliationGeneration"), obj(p, "predecessorCase")
			switch {
			case gen == 1 && str(pred, "state") != "none":
				return &ruleViolation{"predecessorCase", ErrPayloadRule, "generation 1 has no predecessor"}
			case gen > 1 && str(pred, "state") != "present":
				return &ruleViolation{"predecessorCase", ErrPayloadRule, "a later generation names its direct predecessor"}
			case gen > 1 && num(pred, "predecessorReconciliationGeneration") != gen-1:
				return &ruleViolation{"predecessorCase", ErrPayloadRule, "predecessor must be the direct predecessor generation"}
			}
			return nil
		},
	},
	{
		EventType: BillingFinalizationResolutionAppliedV1, EventSchemaVersion: "1", Producer: ProducerCore,
		AggregateType: AggregateFinalizationResolution, AggregateRule: "aggregateId = FinalizationResolutionAggregateID(billingFinalizationFenceId, reconciliationGeneration); aggregateRevision = resolutionRevision (= 1)",
		ActorField: "actorWorkforcePrincipalId",
		Payload: payloadDef("BillingFinalizationReconciliationResolutionAppliedV1Payload", "billing.finalization-reconciliation-resolution.applied@1 (FinalizationReconciliationResolutionAppliedEvent@1): the one Resolution of a case generation.",
			ids("billingReservationId", "billingAccountId", "runId", "billingFinalizationFenceId"),
			schema.F("reconciliationCaseRef", schema.RefText, ""),
			schema.F("reconciliationGeneration", pos, ""),
			schema.F("resolutionRevision", schema.Int{Min: 1, Max: 1}, "always 1"),
			ids("resolutionOperationId"),
			schema.Quad("finalizationCaseIdentityReservation", "FinalizationReconciliationCaseIdentityReservation@1"),
			schema.Quad("finalizationReconciliationResolutionApplied", "FinalizationReconciliationResolutionApplied@1"),
			schema.F("actorWorkforcePrincipalId", schema.PrincipalText, "equals the envelope actor"),
			schema.F("action", schema.Literal{Value: "reevaluate_current_owner_state"}, ""),
		),
		aggregate: func(p map[string]any) (string, int64) {
			return FinalizationResolutionAggregateID(str(p, "billingFinalizationFenceId"), num(p, "reconciliationGeneration")), num(p, "resolutionRevision")
		},
	},
	{
		EventType: GatewayAvailabilityCurrentChangedV1, EventSchemaVersion: "1", Producer: ProducerGateway,
		AggregateType: AggregateGatewayAvailabilityChain, AggregateRule: "aggregateId = GatewayAvailabilityChainID(executionAttemptId, gatewayDeploymentId, providerEvidenceKind, evidenceDimensionKey); aggregateRevision = currentAvailabilityStateVersion",
		Payload: payloadDef("GatewayEvidenceAvailabilityCurrentChangedV1Payload", "gateway.evidence-availability.current-changed@1 (GatewayEvidenceAvailabilityCurrentChanged@1): an attempt-bound availability current advanced. Pre-binding snapshots never produce it.",
			ids("executionAttemptId"),
			schema.F("gatewayDeploymentId", schema.KeyText, ""),
			schema.Quad("attemptExecutionManifest", "AttemptExecutionManifest"),
			schema.Quad("attemptRouteBinding", "AttemptRouteBinding"),
			schema.Quad("gatewayRouteSnapshot", "GatewayRouteSnapshot"),
			schema.F("providerEvidenceKind", schema.Enum{Values: []string{"provider_usage", "provider_cost"}}, ""),
			schema.F("evidenceDimensionKey", schema.KeyText, ""),
			schema.Quad("currentAvailability", "current availability snapshot"),
			schema.F("currentAvailabilityStateVersion", pos, ""),
			schema.F("availableEvidence", schema.Ref{Def: AvailableEvidenceDef}, ""),
		),
		aggregate: func(p map[string]any) (string, int64) {
			return GatewayAvailabilityChainID(str(p, "executionAttemptId"), str(p, "gatewayDeploymentId"), str(p, "providerEvidenceKind"), str(p, "evidenceDimensionKey")), num(p, "currentAvailabilityStateVersion")
		},
	},
	{
		EventType: MeteringSettlementInputCurrentChangedV1, EventSchemaVersion: "1", Producer: ProducerMetering,
		AggregateType: AggregateSettlementInputDimension, AggregateRule: "aggregateId = payload.settlementDimensionId (= SettlementDimensionID(...)); aggregateRevision = settlementInputStateVersion",
		Payload: payloadDef("MeteringSettlementInputCurrentChangedV1Payload", "metering.settlement-input.current-changed@1 (SettlementInputCurrentChanged@1): the current SettlementInputSnapshot@1 of a dimension advanced.",
			dimensionFields(),
			schema.Quad("settlementInputSnapshot", "current SettlementInputSnapshot@1"),
			schema.F("settlementInputStateVersion", pos, ""),
			schema.F("predecessorSettlementInput", schema.Ref{Def: SettlementInputPredecessorDef}, ""),
		),
		aggregate: func(p map[string]any) (string, int64) {
			return str(p, "settlementDimensionId"), num(p, "settlementInputStateVersion")
		},
		refine: all(checkDimension, func(p map[string]any) *ruleViolation {
			v, pred := num(p, "settlementInputStateVersion"), obj(p, "predecessorSettlementInput")
			switch {
			case v == 1 && str(pred, "state") != "none":
				return &ruleViolation{"predecessorSettlementInput", ErrPayloadRule, "state version 1 has no predecessor"}
			case v > 1 && str(pred, "state") != "present":
				return &ruleViolation{"predecessorSettlementInput", ErrPayloadRule, "a later state version carries its direct predecessor"}
			case v > 1 && num(pred, "settlementInputStateVersion") != v-1:
				return &ruleViolation{"predecessorSettlementInput", ErrPayloadRule, "predecessor must be the direct predecessor state version"}
			}
			return nil
		}),
	},
})

func sortPairs(ps []*EventPair) []*EventPair {
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].EventType != ps[j].EventType {
			return ps[i].EventType < ps[j].EventType
		}
		return ps[i].EventSchemaVersion < ps[j].EventSchemaVersion
	})
	return ps
}

var pairsByType = func() map[string]*EventPair {
	m := make(map[string]*EventPair, len(pairs))
	for _, p := range pairs {
		if _, dup := m[p.EventType]; dup {
			panic("envelope: duplicate pair " + p.EventType)
		}
		m[p.EventType] = p
	}
	return m
}()

// Pairs returns every supported pair sorted by (eventType, eventSchemaVersion).
func Pairs() []*EventPair { return append([]*EventPair(nil), pairs...) }

// Pair returns the exact registered pair. Anything else — an unknown type,
// a prefix, a wildcard, an alias, "latest", or a schema version that differs
// from the type's "@" suffix — is ErrUnknownEventPair (the last case as
// ErrEventSchemaVersionMismatch, which wraps it).
func Pair(eventType, eventSchemaVersion string) (*EventPair, error) {
	p, ok := pairsByType[eventType]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownEventPair, eventType)
	}
	if p.EventSchemaVersion != eventSchemaVersion {
		return nil, fmt.Errorf("%w: %s has schema version %q, got %q", ErrEventSchemaVersionMismatch, eventType, p.EventSchemaVersion, eventSchemaVersion)
	}
	return p, nil
}
