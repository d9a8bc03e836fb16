package execution

import (
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/contracts/strict"
)

// Tenant kinds.
const (
	TenantOrganization = "organization"
	TenantPersonal     = "personal"
)

// AudienceRunExecutionState is the one workload audience a
// RunExecutionToken@1 is valid for: opening a Run's execution state in the
// Execution owner.
const AudienceRunExecutionState = "execution_run_execution_state"

// Prefixes and own time fields of the content-addressed objects.
var (
	manifestSelf        = strict.SelfAddressed{Prefix: "runAdmissionManifest", TimeFields: []string{"admittedAt"}}
	tokenSelf           = strict.SelfAddressed{Prefix: "runExecutionToken", TimeFields: []string{"issuedAt"}}
	attemptManifestSelf = strict.SelfAddressed{Prefix: "attemptExecutionManifest", TimeFields: []string{"createdAt"}}
)

// Prefixes of referenced quadruples.
const (
	PrefixRunAdmissionManifest     = "runAdmissionManifest"
	PrefixAttemptExecutionManifest = "attemptExecutionManifest"
	PrefixOutputContract           = "outputContract"
)

// CreditsText is the canonical decimal text of a non-negative integer
// number of credits (never a JSON number, never a float).
var CreditsText = schema.Text{MaxLength: 16, Pattern: `^(0|[1-9][0-9]{0,15})$`}

// selfQuad is an object's own quadruple (schema version 1).
func selfQuad(prefix, doc string) []schema.Field {
	q := schema.Quad(prefix, doc)
	q[1].Type = schema.SchemaVersion{Known: []string{SchemaVersion1}}
	return q
}

// refQuad is a referenced quadruple of a version-1 object.
func refQuad(prefix, doc string) []schema.Field { return selfQuad(prefix, doc) }

func tenantFields() []schema.Field {
	return schema.Fields(
		schema.F("tenantKind", schema.Enum{Values: []string{TenantOrganization, TenantPersonal}}, ""),
		schema.F("tenantId", schema.UUID{}, ""),
		schema.F("workspaceId", schema.UUID{}, ""),
		schema.Opt("projectId", schema.UUID{}, ""),
	)
}

var creditsIdentityDef = &schema.Def{Name: "ReservationCreditsIdentityV1", Doc: "SettlementEconomicIdentity@1 {kind=credits}: the reservation is in integer credits.",
	Type: schema.Object{Fields: schema.F("kind", schema.Literal{Value: "credits"}, "")}}

// RunAdmissionManifestDef describes RunAdmissionManifest@1.
var RunAdmissionManifestDef = &schema.Def{Name: "RunAdmissionManifestV1", Doc: "RunAdmissionManifest@1: what Core admission decided for one Run (EX-1).",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad("runAdmissionManifest", "assigned by Core's repository; excluded from the digest candidate"),
		schema.F("admissionOperationId", schema.UUID{}, "the idempotent admission operation"),
		schema.DigestPairFields("admissionRequestDigestAlgorithmVersion", "admissionRequestDigest", "digest of the canonical AdmissionRequest@1"),
		schema.F("runId", schema.UUID{}, ""),
		tenantFields(),
		schema.F("billingAccountId", schema.UUID{}, ""),
		schema.F("billingReservationId", schema.UUID{}, ""),
		schema.F("reservationEconomicIdentity", schema.Ref{Def: creditsIdentityDef}, ""),
		schema.F("reservedAmount", CreditsText, "canonical decimal text of integer credits"),
		schema.F("admittedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

// RunExecutionTokenDef describes RunExecutionToken@1.
var RunExecutionTokenDef = &schema.Def{Name: "RunExecutionTokenV1", Doc: "RunExecutionToken@1: Core's content-addressed permission to open one Run's execution state in the Execution owner.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad("runExecutionToken", "assigned by Core; excluded from the digest candidate"),
		schema.F("workloadAudience", schema.Literal{Value: AudienceRunExecutionState}, "the one purpose the token serves"),
		tenantFields(),
		schema.F("billingAccountId", schema.UUID{}, ""),
		schema.F("billingReservationId", schema.UUID{}, ""),
		schema.F("runId", schema.UUID{}, ""),
		refQuad(PrefixRunAdmissionManifest, "the Run's RunAdmissionManifest@1, verified through readRunAdmissionManifest"),
		schema.F("issuedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

// AttemptExecutionManifestDef describes AttemptExecutionManifest@1.
var AttemptExecutionManifestDef = &schema.Def{Name: "AttemptExecutionManifestV1", Doc: "AttemptExecutionManifest@1: what one execution attempt is fixed to; rerouting is a new attempt.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixAttemptExecutionManifest, "assigned by Execution; excluded from the digest candidate"),
		schema.F("runId", schema.UUID{}, ""),
		schema.F("runStepId", schema.UUID{}, ""),
		schema.F("executionAttemptId", schema.UUID{}, ""),
		refQuad(PrefixRunAdmissionManifest, "the Run's RunAdmissionManifest@1"),
		schema.F("modelDeploymentId", schema.KeyText, "the actual model deployment"),
		schema.F("gatewayDeploymentId", schema.KeyText, "the gateway deployment that dispatches the attempt"),
		schema.F("routingPolicyRevision", schema.Int{Min: 1}, ""),
		schema.Quad(PrefixOutputContract, "the output contract the attempt must satisfy"),
		schema.F("chargeDimensionRegistryVersion", schema.Literal{Value: settlement.ChargeDimensionRegistryVersion}, "the Contracts charge dimension registry version the set below was taken from (contracts/settlement)"),
		schema.F("chargeDimensionKeys", schema.Array{Items: schema.KeyText, MinItems: 1}, "the charge dimensions the attempt must settle: exactly the registry's set of the output contract, sorted, no duplicate (frozen: Metering and Billing wait for every one)"),
		schema.F("createdAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

// Dispatch dispositions of an ExecutionEligibilityFact@1.
const (
	DispositionDispatched    = "dispatched"
	DispositionNotDispatched = "not_dispatched"
)

// Prefixes of the eligibility and closure objects.
const (
	PrefixExecutionEligibilityFact       = "executionEligibilityFact"
	PrefixAttemptNotDispatchedFact       = "attemptNotDispatchedFact"
	PrefixGatewayPreBindingRejectionFact = "gatewayPreBindingRejectionFact"
	PrefixRunAttemptSetManifest          = "attemptSetManifest"
	PrefixRunExecutionFinalization       = "runExecutionFinalization"
	PrefixRunExecutionToken              = "runExecutionToken"
)

var (
	eligibilitySelf   = strict.SelfAddressed{Prefix: PrefixExecutionEligibilityFact, TimeFields: []string{"finalizedAt"}}
	notDispatchedSelf = strict.SelfAddressed{Prefix: PrefixAttemptNotDispatchedFact, TimeFields: []string{"recordedAt"}}
	attemptSetSelf    = strict.SelfAddressed{Prefix: PrefixRunAttemptSetManifest, TimeFields: []string{"closedAt"}}
	finalizationSelf  = strict.SelfAddressed{Prefix: PrefixRunExecutionFinalization, TimeFields: []string{"closedAt"}}
	conflictSelf      = strict.SelfAddressed{Prefix: "runExecutionFinalizationConflict", TimeFields: []string{"detectedAt"}}
)

func attemptIdentity() []schema.Field {
	return schema.Fields(
		schema.F("runId", schema.UUID{}, ""),
		schema.F("runStepId", schema.UUID{}, ""),
		schema.F("executionAttemptId", schema.UUID{}, ""),
	)
}

// AttemptNotDispatchedFactDef describes AttemptNotDispatchedFact@1.
var AttemptNotDispatchedFactDef = &schema.Def{Name: "AttemptNotDispatchedFactV1", Doc: "AttemptNotDispatchedFact@1: Execution verified that the Gateway slot of the attempt is terminal_rejected before any binding (GW-1).",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixAttemptNotDispatchedFact, "assigned by Execution; excluded from the digest candidate"),
		attemptIdentity(),
		refQuad(PrefixAttemptExecutionManifest, "the attempt's AttemptExecutionManifest@1"),
		schema.F("gatewayDeploymentId", schema.KeyText, "the gateway deployment of the slot"),
		refQuad(PrefixGatewayPreBindingRejectionFact, "the Gateway's GatewayPreBindingRejectionFact@1, read back from the Gateway owner"),
		schema.F("rejectionReasonCode", schema.CodeText, "the Gateway's deterministic rejection reason"),
		schema.F("recordedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

var dispositionDef = &schema.Def{Name: "ExecutionDispatchDispositionV1", Doc: "dispatched (the provider side effect may have happened) or not_dispatched (proved by AttemptNotDispatchedFact@1).",
	Type: schema.Union{Discriminator: "dispatchDisposition", Branches: []schema.Branch{
		{Value: DispositionDispatched},
		{Value: DispositionNotDispatched, Fields: refQuad(PrefixAttemptNotDispatchedFact, "the fact that proves the attempt was never dispatched")},
	}}}

// ExecutionEligibilityFactDef describes ExecutionEligibilityFact@1.
var ExecutionEligibilityFactDef = &schema.Def{Name: "ExecutionEligibilityFactV1", Doc: "ExecutionEligibilityFact@1: the unique eligibility of one attempt (EX-3).",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixExecutionEligibilityFact, "assigned by Execution; excluded from the digest candidate"),
		schema.F("billingAccountId", schema.UUID{}, ""),
		schema.F("billingReservationId", schema.UUID{}, ""),
		attemptIdentity(),
		refQuad(PrefixRunAdmissionManifest, "the Run's RunAdmissionManifest@1"),
		refQuad(PrefixAttemptExecutionManifest, "the attempt's AttemptExecutionManifest@1"),
		schema.F("disposition", schema.Ref{Def: dispositionDef}, ""),
		schema.F("finalizedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

// AttemptSetItemDef is one attempt of a closed attempt set.
var AttemptSetItemDef = &schema.Def{Name: "RunAttemptSetItemV1", Doc: "One attempt of the closed set, sorted by (runStepId, executionAttemptId).",
	Type: schema.Object{Fields: schema.Fields(
		schema.F("runStepId", schema.UUID{}, ""),
		schema.F("executionAttemptId", schema.UUID{}, ""),
		refQuad(PrefixAttemptExecutionManifest, ""),
		refQuad(PrefixExecutionEligibilityFact, ""),
		schema.F("dispatchDisposition", schema.Enum{Values: []string{DispositionDispatched, DispositionNotDispatched}}, ""),
	)}}

func attemptSetFields() []schema.Field {
	return schema.Fields(
		schema.F("attemptCount", schema.Int{Min: 0}, "equals the number of attempts; 0 for an empty set"),
		schema.F("attempts", schema.Array{Items: schema.Ref{Def: AttemptSetItemDef}}, "sorted by (runStepId, executionAttemptId), no duplicate"),
	)
}

func runClosureIdentity() []schema.Field {
	return schema.Fields(
		tenantFields(),
		schema.F("billingAccountId", schema.UUID{}, ""),
		schema.F("billingReservationId", schema.UUID{}, ""),
		schema.F("runId", schema.UUID{}, ""),
		refQuad(PrefixRunAdmissionManifest, "the Run's RunAdmissionManifest@1"),
	)
}

// RunAttemptSetManifestDef describes RunAttemptSetManifest@1.
var RunAttemptSetManifestDef = &schema.Def{Name: "RunAttemptSetManifestV1", Doc: "RunAttemptSetManifest@1: the complete attempt set of a Run at its closure (EX-2).",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixRunAttemptSetManifest, "assigned by Execution; excluded from the digest candidate"),
		runClosureIdentity(),
		attemptSetFields(),
		schema.F("closedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

// RunExecutionFinalizationFactDef describes RunExecutionFinalizationFact@1.
var RunExecutionFinalizationFactDef = &schema.Def{Name: "RunExecutionFinalizationFactV1", Doc: "RunExecutionFinalizationFact@1: the irreversible closure of a Run's attempt set; its attempts equal the set's item by item, in order.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixRunExecutionFinalization, "assigned by Execution; excluded from the digest candidate"),
		runClosureIdentity(),
		refQuad(PrefixRunExecutionToken, "the token the run's execution state was opened with"),
		schema.F("closureOperationId", schema.UUID{}, ""),
		schema.F("runExecutionFinalizationStateVersion", schema.Int{Min: 2, Max: 2}, "the run state version after the CAS accepting_attempts(1) → attempts_closed(2)"),
		refQuad(PrefixRunAttemptSetManifest, "the RunAttemptSetManifest@1 written in the same transaction"),
		attemptSetFields(),
		schema.F("closedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

// RunExecutionFinalizationConflictFactDef describes RunExecutionFinalizationConflictFact@1.
var RunExecutionFinalizationConflictFactDef = &schema.Def{Name: "RunExecutionFinalizationConflictFactV1", Doc: "RunExecutionFinalizationConflictFact@1: readRunFinalizationPrecondition found a closure that conflicts with the request or does not recompute.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad("runExecutionFinalizationConflict", "assigned by Execution; excluded from the digest candidate"),
		schema.F("runId", schema.UUID{}, ""),
		schema.Quad("requestedRunExecutionFinalization", "the finalization quadruple the reader asked about"),
		schema.Opt("storedRunExecutionFinalizationRef", schema.RefText, "the stored closure, when one exists"),
		schema.F("reasonCode", schema.CodeText, ""),
		schema.F("detectedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}
