package execution

import (
	"github.com/oceanway/core/contracts/schema"
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
		schema.F("createdAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}
