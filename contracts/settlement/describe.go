package settlement

import (
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/schema"
)

func quad(prefix, doc string) []schema.Field { return schema.Quad(prefix, doc) }

func selfQuad(prefix, doc string) []schema.Field {
	q := schema.Quad(prefix, doc)
	q[1].Type = schema.SchemaVersion{Known: []string{SchemaVersion1}}
	return q
}

// DecisionDef is the current EligibilityDecision the snapshot fixes.
var DecisionDef = &schema.Def{Name: "SettlementEligibilityDecisionV1", Doc: "The current Metering EligibilityDecision of the attempt and the rule version that produced it.",
	Type: schema.Object{Fields: schema.Fields(
		schema.F("decision", schema.Enum{Values: []string{DecisionEligible, DecisionIneligible}}, "eligible: the attempt may be charged; ineligible: its target amount is zero"),
		schema.F("decisionRuleVersion", schema.Literal{Value: DecisionRuleVersion}, "the rule that maps the eligibility fact and usage to the decision"),
		schema.F("reasonCode", schema.CodeText, "why (dispatched, not_dispatched)"),
		quad(PrefixEligibilityDecision, "the content-addressed EligibilityDecision Metering stores (attempt, fact, disposition, decision, rule; no operation id): one row whichever generation applies it"),
	)}}

// MeterEventHeadDef is the current MeterEvent head of the dimension or none.
var MeterEventHeadDef = &schema.Def{Name: "SettlementMeterEventHeadV1", Doc: "The dimension's current MeterEvent (measured usage) or an explicit none.",
	Type: schema.Union{Discriminator: "state", Branches: []schema.Branch{
		{Value: HeadNone},
		{Value: HeadPresent, Fields: quad(PrefixMeterEvent, "the Metering MeterEvent the quantity comes from")},
	}}}

// QuantityDef is the dimension's quantity: the strict union measured (with
// the MeterEvent's exact quantity) | none (no MeterEvent: not dispatched, or
// usage not measured yet or not trustworthy). Issue 32 part 4: never a "0"
// that could be read as a measurement.
var QuantityDef = &schema.Def{Name: "SettlementQuantityV1", Doc: "The dimension's quantity: measured (from the MeterEvent, exact decimal) or an explicit none.",
	Type: schema.Union{Discriminator: "kind", Branches: []schema.Branch{
		{Value: QuantityMeasured, Fields: schema.Fields(schema.F("quantity", schema.AmountText, "the MeterEvent's quantity, exact decimal"))},
		{Value: QuantityNone},
	}}}

// ProviderEvidenceRefDef is the Gateway provider evidence the usage basis rests on, or none.
var ProviderEvidenceRefDef = &schema.Def{Name: "SettlementProviderEvidenceV1", Doc: "The Gateway provider evidence the availability references (present exactly when available).",
	Type: schema.Union{Discriminator: "state", Branches: []schema.Branch{
		{Value: HeadNone},
		{Value: HeadPresent, Fields: quad(PrefixProviderEvidence, "")},
	}}}

// UsageBasisDef is the gateway usage basis or the not-dispatched fact.
var UsageBasisDef = &schema.Def{Name: "SettlementUsageBasisV1", Doc: "What the quantity rests on: the attempt-bound Gateway usage availability (binding, route, evidence) or the Execution not-dispatched fact.",
	Type: schema.Union{Discriminator: "kind", Branches: []schema.Branch{
		{Value: BasisGatewayUsage, Fields: schema.Fields(
			schema.F("gatewayDeploymentId", schema.KeyText, "the deployment that dispatched the attempt"),
			quad(PrefixAttemptRouteBinding, "the attempt's unique route binding"),
			quad(PrefixGatewayRouteSnapshot, "the route frozen at binding"),
			quad(PrefixCurrentAvailability, "the Gateway usage availability snapshot the Work observed"),
			schema.F("availabilityStateVersion", schema.Int{Min: 1}, "its state version in the Gateway chain"),
			schema.F("availabilityState", schema.Enum{Values: []string{"available", "pending", "not_reported", "unavailable", "conflicting"}}, ""),
			schema.F("providerEvidence", schema.Ref{Def: ProviderEvidenceRefDef}, ""),
			quad(PrefixAvailabilityValidationReceipt, "the Gateway's operation-bound Current Receipt (GatewayAvailabilityCurrentValidationReceipt@1, result current) for this availability; outside the content digest"),
			schema.F(FieldAvailabilityValidationOperation, schema.UUID{}, "the validation operation, derived from the Work operation and the Eligibility Basis digest"),
		)},
		{Value: BasisNotDispatched, Fields: quad(PrefixAttemptNotDispatchedFact, "Execution's proof that the attempt never reached a provider")},
	}}}

// PricingDef is the price and billing policy applied.
var PricingDef = &schema.Def{Name: "SettlementPricingV1", Doc: "The price and billing policy the target amount was computed with.",
	Type: schema.Object{Fields: schema.Fields(
		schema.F("priceBookVersion", schema.Literal{Value: PriceBookVersion}, "the versioned price book of contracts/settlement"),
		schema.F("unitPrice", schema.AmountText, "credits per unit of the dimension, exact decimal"),
		schema.F("billingPolicyVersion", schema.Literal{Value: BillingPolicyVersion}, "the billing policy Billing applies to this input"),
		quad(PrefixRunAdmissionManifest, "the admission that froze the reservation and its economic identity"),
	)}}

// SnapshotDef describes SettlementInputSnapshot@1.
var SnapshotDef = &schema.Def{Name: "SettlementInputSnapshotV1", Doc: "SettlementInputSnapshot@1: one state of the Metering Current chain of one attempt × charge dimension (ME-1); everything Billing needs to settle the dimension, fixed as one content-addressed input.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixSnapshot, "assigned by Metering; excluded from the digest candidate"),
		schema.F("tenantKind", schema.Enum{Values: []string{"organization", "personal"}}, "the tenant the charge belongs to"),
		schema.F("tenantId", schema.UUID{}, ""),
		schema.F("workspaceId", schema.UUID{}, ""),
		schema.Opt("projectId", schema.UUID{}, ""),
		schema.F("billingAccountId", schema.UUID{}, "the account Billing charges"),
		schema.F("billingReservationId", schema.UUID{}, "the reservation the charge settles against"),
		schema.F("runId", schema.UUID{}, ""),
		schema.F("runStepId", schema.UUID{}, ""),
		schema.F("executionAttemptId", schema.UUID{}, ""),
		schema.F("chargeDimensionKey", schema.KeyText, "a charge dimension of the price book"),
		schema.F("settlementDimensionId", schema.UUID{}, "envelope.SettlementDimensionID of the five identities: the chain's aggregate"),
		schema.F("settlementInputStateVersion", schema.Int{Min: 1}, "dense from 1 per dimension"),
		schema.F("predecessorSettlementInput", schema.Ref{Def: envelope.SettlementInputPredecessorDef}, "the direct predecessor five-tuple, none for version 1"),
		quad(PrefixExecutionEligibilityFact, "the Execution eligibility fact of the attempt"),
		schema.F("dispatchDisposition", schema.Enum{Values: []string{DispositionDispatched, DispositionNotDispatched}}, "from that fact"),
		quad(PrefixAttemptExecutionManifest, "the attempt's execution identity"),
		schema.F("eligibilityDecision", schema.Ref{Def: DecisionDef}, ""),
		schema.F("meterEventHead", schema.Ref{Def: MeterEventHeadDef}, ""),
		schema.F("usageBasis", schema.Ref{Def: UsageBasisDef}, ""),
		schema.F("pricing", schema.Ref{Def: PricingDef}, ""),
		schema.F("settlementEconomicIdentity", schema.Ref{Def: envelope.EconomicIdentityDef}, "the reservation's economic identity, frozen at admission"),
		schema.F("quantity", schema.Ref{Def: QuantityDef}, "measured exactly when the MeterEvent head is present, else none"),
		schema.F("unit", schema.KeyText, "the dimension's unit"),
		schema.F("targetNetAmount", schema.AmountText, "measured quantity × unitPrice, exact; 0 for none"),
		schema.F("reconciliationState", schema.Enum{Values: []string{ReconciliationNotRequired, ReconciliationAwaitingEvidence, ReconciliationRequired}}, "whether Billing may settle on it"),
		schema.F("recordedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}
