package execution

import (
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// Gateway objects of the two execution branches (ADR-031 "两种执行分支都必须显式").
const (
	KindAttemptRouteBinding            = "AttemptRouteBinding@1"
	KindGatewayRouteSnapshot           = "GatewayRouteSnapshot@1"
	KindGatewayPreBindingRejectionFact = "GatewayPreBindingRejectionFact@1"
	KindProviderEvidence               = "GatewayProviderEvidence@1"
	KindAvailabilitySnapshot           = "GatewayEvidenceAvailabilitySnapshot@1"
)

// Prefixes of the Gateway objects (the event names them so).
const (
	PrefixAttemptRouteBinding  = "attemptRouteBinding"
	PrefixGatewayRouteSnapshot = "gatewayRouteSnapshot"
	PrefixProviderEvidence     = "providerEvidence"
	PrefixCurrentAvailability  = "currentAvailability"
	PrefixPredecessor          = "predecessorAvailability"
)

// Provider evidence kinds and availability states (GW-2).
const (
	EvidenceProviderUsage = "provider_usage"
	EvidenceProviderCost  = "provider_cost"

	AvailabilityAvailable   = "available"
	AvailabilityPending     = "pending"
	AvailabilityNotReported = "not_reported"
	AvailabilityUnavailable = "unavailable"
	AvailabilityConflicting = "conflicting"
)

// AvailabilityStates lists the five states.
var AvailabilityStates = []string{AvailabilityAvailable, AvailabilityPending, AvailabilityNotReported, AvailabilityUnavailable, AvailabilityConflicting}

var (
	bindingSelf      = strict.SelfAddressed{Prefix: PrefixAttemptRouteBinding, TimeFields: []string{"boundAt"}}
	routeSelf        = strict.SelfAddressed{Prefix: PrefixGatewayRouteSnapshot, TimeFields: []string{"capturedAt"}}
	rejectionSelf    = strict.SelfAddressed{Prefix: PrefixGatewayPreBindingRejectionFact, TimeFields: []string{"rejectedAt"}}
	evidenceSelf     = strict.SelfAddressed{Prefix: PrefixProviderEvidence, TimeFields: []string{"observedAt"}}
	availabilitySelf = strict.SelfAddressed{Prefix: PrefixCurrentAvailability, TimeFields: []string{"recordedAt"}}
)

func slotKeyFields() []schema.Field {
	return schema.Fields(
		schema.F("executionAttemptId", schema.UUID{}, ""),
		schema.F("gatewayDeploymentId", schema.KeyText, ""),
		refQuad(PrefixAttemptExecutionManifest, "the attempt's AttemptExecutionManifest@1 (with attempt and deployment: the dispatch slot key)"),
	)
}

func routeFields() []schema.Field {
	return schema.Fields(
		schema.F("channelId", schema.KeyText, ""),
		schema.F("supplyId", schema.KeyText, ""),
		schema.F("credentialVersion", schema.Int{Min: 1}, ""),
		schema.F("providerModel", schema.KeyText, ""),
		schema.F("adapterId", schema.KeyText, ""),
	)
}

// GatewayRouteSnapshotDef describes GatewayRouteSnapshot@1.
var GatewayRouteSnapshotDef = &schema.Def{Name: "GatewayRouteSnapshotV1", Doc: "GatewayRouteSnapshot@1: the route the Gateway chose for one attempt, frozen at binding.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixGatewayRouteSnapshot, "assigned by the Gateway; excluded from the digest candidate"),
		slotKeyFields(),
		schema.F("routingPolicyRevision", schema.Int{Min: 1}, "equals the attempt manifest's"),
		routeFields(),
		schema.F("capturedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

// AttemptRouteBindingDef describes AttemptRouteBinding@1.
var AttemptRouteBindingDef = &schema.Def{Name: "AttemptRouteBindingV1", Doc: "AttemptRouteBinding@1: the unique binding of an attempt to one route; channel, supply, credential version, provider model and adapter never change within an attempt.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixAttemptRouteBinding, "assigned by the Gateway; excluded from the digest candidate"),
		slotKeyFields(),
		refQuad(PrefixGatewayRouteSnapshot, "the route snapshot written with the binding"),
		routeFields(),
		schema.F("boundAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

// GatewayPreBindingRejectionFactDef describes GatewayPreBindingRejectionFact@1.
var GatewayPreBindingRejectionFactDef = &schema.Def{Name: "GatewayPreBindingRejectionFactV1", Doc: "GatewayPreBindingRejectionFact@1: a deterministic Gateway rejection before any provider side effect; no binding, route or usage exists for the slot.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixGatewayPreBindingRejectionFact, "assigned by the Gateway; excluded from the digest candidate"),
		slotKeyFields(),
		schema.F("rejectionReasonCode", schema.CodeText, ""),
		schema.F("rejectedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

// ProviderEvidenceDef describes GatewayProviderEvidence@1.
var ProviderEvidenceDef = &schema.Def{Name: "GatewayProviderEvidenceV1", Doc: "GatewayProviderEvidence@1: immutable usage or cost evidence a provider reported for a bound attempt; a correction is a new evidence object.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixProviderEvidence, "assigned by the Gateway; excluded from the digest candidate"),
		schema.F("executionAttemptId", schema.UUID{}, ""),
		schema.F("gatewayDeploymentId", schema.KeyText, ""),
		refQuad(PrefixAttemptRouteBinding, "the binding the evidence belongs to"),
		schema.F("providerEvidenceKind", schema.Enum{Values: []string{EvidenceProviderUsage, EvidenceProviderCost}}, ""),
		schema.F("evidenceDimensionKey", schema.KeyText, "e.g. text.input_tokens, media.video_seconds, cost.usd_micros"),
		schema.F("quantity", schema.AmountText, "canonical decimal text, never a float"),
		schema.F("providerReportId", schema.PrincipalText, "the provider's report identifier"),
		schema.F("observedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

var predecessorDef = &schema.Def{Name: "GatewayAvailabilityPredecessorV1", Doc: "The previous snapshot of the chain, or none for state version 1.",
	Type: schema.Union{Discriminator: "state", Branches: []schema.Branch{
		{Value: "none"},
		{Value: "present", Fields: schema.Fields(refQuad(PrefixPredecessor, ""), schema.F("predecessorStateVersion", schema.Int{Min: 1}, ""))},
	}}}

var availableEvidenceDef = &schema.Def{Name: "GatewaySnapshotEvidenceV1", Doc: "The provider evidence the snapshot references, or none.",
	Type: schema.Union{Discriminator: "state", Branches: []schema.Branch{
		{Value: "none"},
		{Value: "present", Fields: refQuad(PrefixProviderEvidence, "")},
	}}}

// AvailabilitySnapshotDef describes GatewayEvidenceAvailabilitySnapshot@1.
var AvailabilitySnapshotDef = &schema.Def{Name: "GatewayEvidenceAvailabilitySnapshotV1", Doc: "GatewayEvidenceAvailabilitySnapshot@1: one state of an attempt-bound availability Current chain (attempt, deployment, evidence kind, dimension), dense from state version 1.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixCurrentAvailability, "assigned by the Gateway; excluded from the digest candidate"),
		slotKeyFields(),
		refQuad(PrefixAttemptRouteBinding, ""),
		refQuad(PrefixGatewayRouteSnapshot, ""),
		schema.F("providerEvidenceKind", schema.Enum{Values: []string{EvidenceProviderUsage, EvidenceProviderCost}}, ""),
		schema.F("evidenceDimensionKey", schema.KeyText, ""),
		schema.F("availabilityState", schema.Enum{Values: AvailabilityStates}, ""),
		schema.F("stateReasonCode", schema.CodeText, ""),
		schema.F("stateVersion", schema.Int{Min: 1}, "dense from 1 per chain"),
		schema.F("predecessor", schema.Ref{Def: predecessorDef}, ""),
		schema.F("availableEvidence", schema.Ref{Def: availableEvidenceDef}, "present exactly when availabilityState is available"),
		schema.F("recordedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

// KindGatewayEvidenceConflictFact is the Gateway owner's conflict fact about
// one provider evidence (outbox spec: blockingCause
// gateway_usage_owner_conflict names its quadruple).
const KindGatewayEvidenceConflictFact = "GatewayEvidenceConflictFact@1"

// PrefixGatewayEvidenceConflictFact is the fact's own quadruple prefix (the
// spec's gatewayEvidenceConflictFact{Ref,SchemaVersion,...}).
const PrefixGatewayEvidenceConflictFact = "gatewayEvidenceConflictFact"

// Reason codes of GatewayEvidenceConflictFact@1.
const (
	// EvidenceConflictReportDisagrees: the provider sent the evidence's
	// report id again with another quantity; the Gateway cannot vouch for
	// the stored quantity until the provider sends a corrected report.
	EvidenceConflictReportDisagrees = "provider_report_disagrees"
)

var evidenceConflictSelf = strict.SelfAddressed{Prefix: PrefixGatewayEvidenceConflictFact, TimeFields: []string{"detectedAt"}}

// GatewayEvidenceConflictFactDef describes GatewayEvidenceConflictFact@1.
var GatewayEvidenceConflictFactDef = &schema.Def{Name: "GatewayEvidenceConflictFactV1", Doc: "GatewayEvidenceConflictFact@1: the Gateway cannot vouch for one stored provider evidence (the provider contradicted it); readGatewayProviderEvidence answers conflicting with this quadruple until a successor availability cites other evidence. One per evidence, insert-only.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixGatewayEvidenceConflictFact, "assigned by the Gateway; excluded from the digest candidate"),
		schema.F("executionAttemptId", schema.UUID{}, ""),
		schema.F("gatewayDeploymentId", schema.KeyText, ""),
		refQuad(PrefixAttemptRouteBinding, "the binding the contested evidence belongs to"),
		schema.F("providerEvidenceKind", schema.Enum{Values: []string{EvidenceProviderUsage, EvidenceProviderCost}}, ""),
		schema.F("evidenceDimensionKey", schema.KeyText, ""),
		refQuad(PrefixProviderEvidence, "the contested evidence"),
		schema.F("providerReportId", schema.PrincipalText, "the contested evidence's report id"),
		schema.F("conflictingQuantity", schema.AmountText, "the other quantity the provider reported under the same report id"),
		schema.F("reasonCode", schema.Enum{Values: []string{EvidenceConflictReportDisagrees}}, ""),
		schema.F("detectedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}
