package billing

import (
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// Prefixes of the quadruples the finalization objects bind (their own
// prefixes, PrefixInputManifest, PrefixValidationBundle and PrefixDecision,
// are declared with the committed fact in committed.go).
const (
	PrefixRunAdmission       = "runAdmissionManifest"
	PrefixRunFinalization    = "runExecutionFinalization"
	PrefixAttemptSet         = "attemptSetManifest"
	PrefixSettlementInput    = "settlementInputSnapshot"
	PrefixAvailability       = "availabilitySnapshot"
	PrefixExecutionReceipt   = "runExecutionFinalizationReceipt"
	PrefixSettlementReceipt  = "settlementInputCurrentReceipt"
	PrefixAvailabilityReadOf = "gatewayAvailabilityRead"
)

// Dispatch dispositions of a manifest dimension (the attempt's eligibility).
const (
	DispositionDispatched    = "dispatched"
	DispositionNotDispatched = "not_dispatched"
)

// Input states of a manifest dimension (the current settlement input
// snapshot's state). Only metered and terminal_none are closed inputs a
// success may be decided on (ADR-031).
const (
	InputMetered      = "metered"
	InputTerminalNone = "terminal_none"
	InputPending      = "pending"
	InputConflicting  = "conflicting"
)

// Purposes the receipt entries echo.
const (
	PurposeBillingFinalization = "billing_finalization"
	// PurposeMeteringFinalization is the purpose of Metering's
	// validateSettlementInputCurrent receipt for a finalization.
	PurposeMeteringFinalization = "finalization"
)

// ReadAvailabilitySnapshotV1 is the Gateway read a gateway receipt entry
// records (event-bound, immutable snapshot).
const ReadAvailabilitySnapshotV1 = "readEvidenceAvailabilitySnapshot@1"

// Decisions of BillingFinalizationDecision@1.
const (
	DecisionSettleAndReleaseRemainder = "settle_and_release_remainder"
	DecisionReleaseAll                = "release_all"
	DecisionBlocked                   = "blocked"
	DecisionReconciliationRequired    = "reconciliation_required"
)

// ReasonClosureEventNotApplied is the blocking finish of a Work that ran
// before the closure event was applied: no input manifest, no decision.
const ReasonClosureEventNotApplied = "closure_event_not_applied"

// Reasons of the two evaluation-only decisions.
const (
	ReasonExecutionNotClosed     = "execution_not_closed"
	ReasonInputsNotClosed        = "inputs_not_closed"
	ReasonInputConflicting       = "input_conflicting"
	ReasonTargetAboveReservation = "target_above_reservation"
	ReasonEconomicIdentityDiffer = "economic_identity_differs"
	ReasonExecutionConflicting   = "execution_conflicting"
)

var (
	manifestSelf = strict.SelfAddressed{Prefix: PrefixInputManifest, TimeFields: []string{"createdAt"}}
	bundleSelf   = strict.SelfAddressed{Prefix: PrefixValidationBundle, TimeFields: []string{"assembledAt"}}
	decisionSelf = strict.SelfAddressed{Prefix: PrefixDecision, TimeFields: []string{"decidedAt"}}
)

func sealedQuad(prefix, doc string) []schema.Field {
	q := schema.Quad(prefix, doc)
	q[1].Type = schema.SchemaVersion{Known: []string{SchemaVersion1}}
	return q
}

var uuid = schema.UUID{}

func ids(names ...string) []schema.Field {
	var out []schema.Field
	for _, n := range names {
		out = append(out, schema.F(n, uuid, "")...)
	}
	return out
}

func tenantFields() []schema.Field {
	return schema.Fields(
		schema.F("tenantKind", schema.Enum{Values: []string{"organization", "personal"}}, ""),
		ids("tenantId", "workspaceId"),
		schema.Opt("projectId", uuid, ""),
	)
}

var creditsIdentityDef = &schema.Def{Name: "FinalizationReservationCreditsIdentityV1", Doc: "the reservation's economic identity: integer credits.",
	Type: schema.Object{Fields: schema.F("kind", schema.Literal{Value: "credits"}, "")}}

var availabilityDef = &schema.Def{Name: "FinalizationDimensionAvailabilityV1", Doc: "the attempt-bound Gateway availability snapshot a dispatched dimension's settlement input is based on; none for a not-dispatched dimension (ADR-031: no Gateway receipt may be requested for it).",
	Type: schema.Union{Discriminator: "state", Branches: []schema.Branch{
		{Value: "none"},
		{Value: "present", Fields: availabilityIdentity()},
	}}}

func availabilityIdentity() []schema.Field {
	return schema.Fields(
		schema.F("gatewayDeploymentId", schema.KeyText, ""),
		schema.F("providerEvidenceKind", schema.KeyText, ""),
		schema.F("evidenceDimensionKey", schema.KeyText, ""),
		schema.F("availabilityStateVersion", schema.Int{Min: 1}, ""),
		schema.Quad(PrefixAvailability, "GatewayEvidenceAvailabilitySnapshot@1"),
	)
}

// ManifestDimensionDef is one Attempt × Charge Dimension of the manifest.
var ManifestDimensionDef = &schema.Def{Name: "FinalizationInputDimensionV1", Doc: "One Attempt × Charge Dimension and its current settlement input, sorted by (runStepId, executionAttemptId, chargeDimensionKey).",
	Type: schema.Object{Fields: schema.Fields(
		ids("runStepId", "executionAttemptId"),
		schema.F("chargeDimensionKey", schema.KeyText, "registered charge dimension key"),
		schema.F("settlementDimensionId", uuid, "derivation settlement_dimension@1"),
		schema.F("dispatchDisposition", schema.Enum{Values: []string{DispositionDispatched, DispositionNotDispatched}}, ""),
		schema.Quad(PrefixSettlementInput, "the current SettlementInputSnapshot@1 the coordinator recorded"),
		schema.F("settlementInputStateVersion", schema.Int{Min: 1}, ""),
		schema.F("settlementEconomicIdentity", schema.Ref{Def: envelope.EconomicIdentityDef}, ""),
		schema.F("inputState", schema.Enum{Values: []string{InputMetered, InputTerminalNone, InputPending, InputConflicting}}, ""),
		schema.F("targetAmount", schema.AmountText, "target net amount of the dimension"),
		schema.F("gatewayAvailability", schema.Ref{Def: availabilityDef}, ""),
	)}}

// FinalizationInputManifestDef describes FinalizationInputManifest@1.
var FinalizationInputManifestDef = &schema.Def{Name: "FinalizationInputManifestV1", Doc: "FinalizationInputManifest@1: the Execution closure and the exact settlement inputs one finalization evaluation covers (BI-1).",
	Type: schema.Object{Fields: schema.Fields(
		sealedQuad(PrefixInputManifest, "assigned by Billing; excluded from the digest candidate"),
		tenantFields(),
		ids("billingAccountId", "billingReservationId", "runId", "billingFinalizationFenceId", "billingFinalizationOperationId"),
		schema.Quad(PrefixRunAdmission, "the Run's RunAdmissionManifest@1"),
		schema.F("reservationEconomicIdentity", schema.Ref{Def: creditsIdentityDef}, ""),
		schema.F("reservedAmount", schema.AmountText, ""),
		schema.F("closureOperationId", uuid, ""),
		schema.Quad(PrefixRunFinalization, "the applied RunExecutionFinalizationFact@1"),
		schema.F("runExecutionFinalizationStateVersion", schema.Int{Min: 2, Max: 2}, ""),
		schema.Quad(PrefixAttemptSet, "the closure's RunAttemptSetManifest@1"),
		schema.F("attemptCount", schema.Int{}, ""),
		schema.F("dimensionCount", schema.Int{}, "equals the number of dimensions"),
		schema.F("dimensions", schema.Array{Items: schema.Ref{Def: ManifestDimensionDef}}, "sorted, no duplicate"),
		schema.F("targetTotal", schema.AmountText, "Σ targetAmount, exact"),
		schema.F("createdAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

func echo() []schema.Field {
	return schema.Fields(
		schema.F("billingFinalizationOperationId", uuid, "equals the bundle's"),
		schema.Quad(PrefixInputManifest, "equals the bundle's"),
	)
}

var executionEntryDef = &schema.Def{Name: "FinalizationExecutionReceiptEntryV1", Doc: "The one Execution closure receipt (RunExecutionFinalizationReceipt@1).",
	Type: schema.Object{Fields: schema.Fields(
		schema.F("purpose", schema.Literal{Value: PurposeBillingFinalization}, ""),
		echo(),
		schema.Quad(PrefixRunFinalization, "the verified closure fact"),
		schema.Quad(PrefixAttemptSet, "the verified attempt set"),
		schema.F("attemptCount", schema.Int{}, ""),
		schema.Quad(PrefixExecutionReceipt, "RunExecutionFinalizationReceipt@1"),
	)}}

var meteringEntryDef = &schema.Def{Name: "FinalizationMeteringReceiptEntryV1", Doc: "One Metering validateSettlementInputCurrent receipt (purpose finalization) per manifest dimension.",
	Type: schema.Object{Fields: schema.Fields(
		schema.F("purpose", schema.Literal{Value: PurposeMeteringFinalization}, ""),
		echo(),
		ids("runStepId", "executionAttemptId"),
		schema.F("chargeDimensionKey", schema.KeyText, ""),
		schema.Quad(PrefixSettlementInput, "the validated snapshot"),
		schema.F("settlementInputStateVersion", schema.Int{Min: 1}, ""),
		schema.Quad(PrefixSettlementReceipt, "Metering's current-validation receipt"),
	)}}

var gatewayEntryDef = &schema.Def{Name: "FinalizationGatewayReceiptEntryV1", Doc: "One Gateway receipt per distinct attempt-bound availability snapshot of the manifest; none for not-dispatched dimensions.",
	Type: schema.Object{Fields: schema.Fields(
		schema.F("purpose", schema.Literal{Value: PurposeBillingFinalization}, ""),
		echo(),
		schema.F("readContractVersion", schema.Literal{Value: ReadAvailabilitySnapshotV1}, "the directed Gateway read that answered found"),
		schema.F("executionAttemptId", uuid, ""),
		availabilityIdentity(),
	)}}

// FinalizationValidationBundleDef describes FinalizationValidationBundle@1.
var FinalizationValidationBundleDef = &schema.Def{Name: "FinalizationValidationBundleV1", Doc: "FinalizationValidationBundle@1: the three receipt sets of one finalization input manifest (BI-1).",
	Type: schema.Object{Fields: schema.Fields(
		sealedQuad(PrefixValidationBundle, "assigned by Billing; excluded from the digest candidate"),
		ids("billingReservationId", "runId"),
		echo(),
		schema.F("executionReceipt", schema.Ref{Def: executionEntryDef}, "exactly one"),
		schema.F("meteringReceiptCount", schema.Int{}, ""),
		schema.F("meteringReceipts", schema.Array{Items: schema.Ref{Def: meteringEntryDef}}, "one per dimension, in manifest order"),
		schema.F("gatewayReceiptCount", schema.Int{}, ""),
		schema.F("gatewayReceipts", schema.Array{Items: schema.Ref{Def: gatewayEntryDef}}, "one per distinct availability, sorted"),
		schema.F("assembledAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

var outcomeDef = &schema.Def{Name: "BillingFinalizationOutcomeV1", Doc: "The decision: the two successes carry the bundle and the exact amounts; the two evaluations carry the reason and never move money.",
	Type: schema.Union{Discriminator: "decision", Branches: []schema.Branch{
		{Value: DecisionSettleAndReleaseRemainder, Fields: schema.Fields(
			schema.Quad(PrefixValidationBundle, "the complete FinalizationValidationBundle@1"),
			schema.F("settledAmount", schema.AmountText, "Σ targets"),
			schema.F("releasedAmount", schema.AmountText, "reserved − settled")),
		},
		{Value: DecisionReleaseAll, Fields: schema.Fields(
			schema.Quad(PrefixValidationBundle, "the complete FinalizationValidationBundle@1"),
			schema.F("settledAmount", schema.Literal{Value: "0"}, "explicit zero target"),
			schema.F("releasedAmount", schema.AmountText, "the whole reservation")),
		},
		{Value: DecisionBlocked, Fields: schema.F("reasonCode", schema.Enum{Values: []string{
			ReasonExecutionNotClosed, ReasonInputsNotClosed}}, "a normal, visible wait")},
		{Value: DecisionReconciliationRequired, Fields: schema.Fields(schema.F("reasonCode", schema.Enum{Values: []string{
			ReasonInputConflicting, ReasonTargetAboveReservation, ReasonEconomicIdentityDiffer, ReasonExecutionConflicting}}, "recorded as an evaluation until the case and command chain exist"),
			optQuad(PrefixExecutionConflict, "with execution_conflicting only: the Execution owner's stored RunExecutionFinalizationConflictFact@1 (issue 32)"))},
	}}}

// BillingFinalizationDecisionDef describes BillingFinalizationDecision@1.
var BillingFinalizationDecisionDef = &schema.Def{Name: "BillingFinalizationDecisionV1", Doc: "BillingFinalizationDecision@1: the decision of one finalization evaluation over one input manifest (BI-1).",
	Type: schema.Object{Fields: schema.Fields(
		sealedQuad(PrefixDecision, "assigned by Billing; excluded from the digest candidate"),
		ids("billingAccountId", "billingReservationId", "runId", "billingFinalizationFenceId", "billingFinalizationOperationId"),
		schema.Quad(PrefixInputManifest, "the evaluated FinalizationInputManifest@1"),
		schema.F("reservationEconomicIdentity", schema.Ref{Def: creditsIdentityDef}, ""),
		schema.F("reservedAmount", schema.AmountText, ""),
		schema.F("targetTotal", schema.AmountText, "the manifest's Σ targets"),
		schema.F("outcome", schema.Ref{Def: outcomeDef}, ""),
		schema.F("decidedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

// PrefixExecutionConflict is the prefix of the Execution owner's
// RunExecutionFinalizationConflictFact@1 quadruple a
// reconciliation_required / execution_conflicting decision binds (issue 32).
const PrefixExecutionConflict = "runExecutionFinalizationConflict"

// optQuad is a quadruple whose four fields are present together or not at
// all (decisionRules checks the all-or-none).
func optQuad(prefix, doc string) []schema.Field {
	fs := schema.Quad(prefix, doc)
	for i := range fs {
		fs[i].Optional = true
	}
	return fs
}
