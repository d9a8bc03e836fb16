package execution

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/contracts/strict"
)

// Tenant is the tenant of a Run.
type Tenant struct {
	Kind        string
	TenantID    string
	WorkspaceID string
	ProjectID   string // optional
}

func (t Tenant) put(m map[string]any) {
	m["tenantKind"] = t.Kind
	m["tenantId"] = t.TenantID
	m["workspaceId"] = t.WorkspaceID
	if t.ProjectID != "" {
		m["projectId"] = t.ProjectID
	}
}

func readTenant(m map[string]any) Tenant {
	return Tenant{Kind: str(m, "tenantKind"), TenantID: str(m, "tenantId"), WorkspaceID: str(m, "workspaceId"), ProjectID: str(m, "projectId")}
}

func timeOf(m map[string]any, k string) time.Time {
	t, _ := strict.ParseTimestamp(str(m, k))
	return t
}

// RunAdmissionManifest is RunAdmissionManifest@1 — the smallest strict form
// carrying what admission decided:
//
//	runAdmissionManifestRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	admissionOperationId                        the idempotent admission operation (replays find the same run)
//	admissionRequestDigestAlgorithmVersion / admissionRequestDigest
//	                                            binds the exact canonical request that was admitted
//	runId                                       the Run the manifest admits
//	tenantKind / tenantId / workspaceId / projectId?
//	                                            the tenant every owner read is bound to
//	billingAccountId / billingReservationId     who pays and which reservation holds the credits
//	reservationEconomicIdentity = {kind=credits}
//	reservedAmount                              canonical decimal text of integer credits
//	admittedAt                                  excluded from the digest candidate
type RunAdmissionManifest struct {
	Manifest             strict.Quadruple
	AdmissionOperationID string
	RequestDigest        digest.Digest
	RunID                string
	Tenant               Tenant
	BillingAccountID     string
	BillingReservationID string
	ReservedCredits      int64
	AdmittedAt           time.Time
}

func (*RunAdmissionManifest) Kind() string              { return KindRunAdmissionManifest }
func (m *RunAdmissionManifest) Quad() *strict.Quadruple { return &m.Manifest }

// ToJSON returns the manifest's full JSON form.
func (m *RunAdmissionManifest) ToJSON() map[string]any {
	out := map[string]any{
		"admissionOperationId":                   m.AdmissionOperationID,
		"admissionRequestDigestAlgorithmVersion": string(m.RequestDigest.Algorithm),
		"admissionRequestDigest":                 m.RequestDigest.Value,
		"runId":                                  m.RunID,
		"billingAccountId":                       m.BillingAccountID,
		"billingReservationId":                   m.BillingReservationID,
		"reservationEconomicIdentity":            map[string]any{"kind": "credits"},
		"reservedAmount":                         strconv.FormatInt(m.ReservedCredits, 10),
		"admittedAt":                             strict.FormatTimestamp(m.AdmittedAt),
	}
	m.Tenant.put(out)
	m.Manifest.Put(out, manifestSelf.Prefix)
	return out
}

// DecodeRunAdmissionManifest strictly decodes a manifest and verifies its
// embedded digest.
func DecodeRunAdmissionManifest(doc []byte) (*RunAdmissionManifest, error) {
	m, err := decodeMap(KindRunAdmissionManifest, doc)
	if err != nil {
		return nil, err
	}
	credits, _ := strconv.ParseInt(str(m, "reservedAmount"), 10, 64)
	return &RunAdmissionManifest{
		Manifest:             quad(m, manifestSelf.Prefix),
		AdmissionOperationID: str(m, "admissionOperationId"),
		RequestDigest:        digest.Digest{Algorithm: digest.Algorithm(str(m, "admissionRequestDigestAlgorithmVersion")), Value: str(m, "admissionRequestDigest")},
		RunID:                str(m, "runId"),
		Tenant:               readTenant(m),
		BillingAccountID:     str(m, "billingAccountId"),
		BillingReservationID: str(m, "billingReservationId"),
		ReservedCredits:      credits,
		AdmittedAt:           timeOf(m, "admittedAt"),
	}, nil
}

// RunExecutionToken is RunExecutionToken@1 — our definition (no document
// lists its fields). Core issues it at admission; the Execution owner opens
// a Run's execution state only with it, after verifying it against Core's
// readRunAdmissionManifest (the manifest digest recomputes and every
// identity below equals the manifest's):
//
//	runExecutionTokenRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	                          content address: Execution stores the exact token it accepted
//	workloadAudience          = execution_run_execution_state: the token serves this one purpose
//	                          and no other owner accepts it (ADR-031: exact workload audience)
//	tenantKind / tenantId / workspaceId / projectId?
//	                          the tenant the manifest read is bound to (no cross-tenant read)
//	billingAccountId / billingReservationId
//	                          carried by execution.run-finalization.closed@1; fixed here so
//	                          Execution never derives them from anything but Core's manifest
//	runId                     the one Run the token opens
//	runAdmissionManifest quadruple
//	                          ADR-031: the token carries and verifies the manifest quadruple
//	                          item by item; it is the key of the manifest read (never a bare ref)
//	issuedAt                  excluded from the digest candidate
type RunExecutionToken struct {
	Token                strict.Quadruple
	Tenant               Tenant
	BillingAccountID     string
	BillingReservationID string
	RunID                string
	Manifest             strict.Quadruple
	IssuedAt             time.Time
}

func (*RunExecutionToken) Kind() string              { return KindRunExecutionToken }
func (t *RunExecutionToken) Quad() *strict.Quadruple { return &t.Token }

// ToJSON returns the token's full JSON form.
func (t *RunExecutionToken) ToJSON() map[string]any {
	out := map[string]any{
		"workloadAudience":     AudienceRunExecutionState,
		"billingAccountId":     t.BillingAccountID,
		"billingReservationId": t.BillingReservationID,
		"runId":                t.RunID,
		"issuedAt":             strict.FormatTimestamp(t.IssuedAt),
	}
	t.Tenant.put(out)
	t.Manifest.Put(out, PrefixRunAdmissionManifest)
	t.Token.Put(out, tokenSelf.Prefix)
	return out
}

// DecodeRunExecutionToken strictly decodes a token and verifies its digest.
func DecodeRunExecutionToken(doc []byte) (*RunExecutionToken, error) {
	m, err := decodeMap(KindRunExecutionToken, doc)
	if err != nil {
		return nil, err
	}
	return &RunExecutionToken{
		Token:                quad(m, tokenSelf.Prefix),
		Tenant:               readTenant(m),
		BillingAccountID:     str(m, "billingAccountId"),
		BillingReservationID: str(m, "billingReservationId"),
		RunID:                str(m, "runId"),
		Manifest:             quad(m, PrefixRunAdmissionManifest),
		IssuedAt:             timeOf(m, "issuedAt"),
	}, nil
}

// TokenFor builds (unsealed) the token of a manifest.
func TokenFor(m *RunAdmissionManifest, ref string, issuedAt time.Time) *RunExecutionToken {
	return &RunExecutionToken{
		Token: strict.Quadruple{Ref: ref}, Tenant: m.Tenant, BillingAccountID: m.BillingAccountID,
		BillingReservationID: m.BillingReservationID, RunID: m.RunID, Manifest: m.Manifest, IssuedAt: issuedAt,
	}
}

// AttemptExecutionManifest is AttemptExecutionManifest@1 — our definition
// of what ADR-031 says an attempt fixes:
//
//	attemptExecutionManifestRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	runId / runStepId / executionAttemptId     the attempt's identity
//	runAdmissionManifest quadruple             carried and verified item by item (ADR-031)
//	modelDeploymentId                          the actual model deployment
//	gatewayDeploymentId                        the gateway deployment (part of the dispatch slot key)
//	routingPolicyRevision                      the routing policy revision the route was chosen by
//	outputContract quadruple                   the output contract the attempt must satisfy
//	chargeDimensionRegistryVersion,            the charge dimensions the attempt must settle: the Contracts
//	chargeDimensionKeys[]                      registry's set of the output contract (contracts/settlement),
//	                                           frozen here so no later registry, evidence or reader changes it
//	createdAt                                  excluded from the digest candidate
//
// Channel, supply, credential version, provider model and adapter are fixed
// by the Gateway's AttemptRouteBinding for the attempt; none of them ever
// changes within an attempt: rerouting is a new attempt with a new manifest.
type AttemptExecutionManifest struct {
	Manifest              strict.Quadruple
	RunID                 string
	RunStepID             string
	ExecutionAttemptID    string
	RunAdmissionManifest  strict.Quadruple
	ModelDeploymentID     string
	GatewayDeploymentID   string
	RoutingPolicyRevision int64
	OutputContract        strict.Quadruple
	// ChargeDimensionRegistryVersion and ChargeDimensionKeys are the frozen
	// expected charge dimension set (sorted).
	ChargeDimensionRegistryVersion string
	ChargeDimensionKeys            []string
	CreatedAt                      time.Time
}

func (*AttemptExecutionManifest) Kind() string              { return KindAttemptExecutionManifest }
func (a *AttemptExecutionManifest) Quad() *strict.Quadruple { return &a.Manifest }

// ToJSON returns the manifest's full JSON form.
func (a *AttemptExecutionManifest) ToJSON() map[string]any {
	out := map[string]any{
		"runId":                          a.RunID,
		"runStepId":                      a.RunStepID,
		"executionAttemptId":             a.ExecutionAttemptID,
		"modelDeploymentId":              a.ModelDeploymentID,
		"gatewayDeploymentId":            a.GatewayDeploymentID,
		"routingPolicyRevision":          a.RoutingPolicyRevision,
		"createdAt":                      strict.FormatTimestamp(a.CreatedAt),
		"chargeDimensionRegistryVersion": a.ChargeDimensionRegistryVersion,
	}
	keys := make([]any, len(a.ChargeDimensionKeys))
	for i, k := range a.ChargeDimensionKeys {
		keys[i] = k
	}
	out["chargeDimensionKeys"] = keys
	a.RunAdmissionManifest.Put(out, PrefixRunAdmissionManifest)
	a.OutputContract.Put(out, PrefixOutputContract)
	a.Manifest.Put(out, attemptManifestSelf.Prefix)
	return out
}

// DecodeAttemptExecutionManifest strictly decodes an attempt manifest and
// verifies its digest.
func DecodeAttemptExecutionManifest(doc []byte) (*AttemptExecutionManifest, error) {
	m, err := decodeMap(KindAttemptExecutionManifest, doc)
	if err != nil {
		return nil, err
	}
	return &AttemptExecutionManifest{
		Manifest:                       quad(m, attemptManifestSelf.Prefix),
		RunID:                          str(m, "runId"),
		RunStepID:                      str(m, "runStepId"),
		ExecutionAttemptID:             str(m, "executionAttemptId"),
		RunAdmissionManifest:           quad(m, PrefixRunAdmissionManifest),
		ModelDeploymentID:              str(m, "modelDeploymentId"),
		GatewayDeploymentID:            str(m, "gatewayDeploymentId"),
		RoutingPolicyRevision:          i64(m, "routingPolicyRevision"),
		OutputContract:                 quad(m, PrefixOutputContract),
		ChargeDimensionRegistryVersion: str(m, "chargeDimensionRegistryVersion"),
		ChargeDimensionKeys:            strs(m, "chargeDimensionKeys"),
		CreatedAt:                      timeOf(m, "createdAt"),
	}, nil
}

// SameAs reports whether b is a with the same content (every field; the
// dimension set compared element by element).
func (a *AttemptExecutionManifest) SameAs(b *AttemptExecutionManifest) bool {
	return a.Manifest == b.Manifest && a.RunID == b.RunID && a.RunStepID == b.RunStepID &&
		a.ExecutionAttemptID == b.ExecutionAttemptID && a.RunAdmissionManifest == b.RunAdmissionManifest &&
		a.ModelDeploymentID == b.ModelDeploymentID && a.GatewayDeploymentID == b.GatewayDeploymentID &&
		a.RoutingPolicyRevision == b.RoutingPolicyRevision && a.OutputContract == b.OutputContract &&
		a.ChargeDimensionRegistryVersion == b.ChargeDimensionRegistryVersion &&
		slices.Equal(a.ChargeDimensionKeys, b.ChargeDimensionKeys) && a.CreatedAt.Equal(b.CreatedAt)
}

// attemptManifestRules: the frozen charge dimension set is exactly the
// registry's set of the output contract under the named registry version
// (sorted, no duplicate, every key priced).
func attemptManifestRules(m map[string]any) error {
	oc := quad(m, PrefixOutputContract)
	if err := settlement.CheckRegisteredDimensions(str(m, "chargeDimensionRegistryVersion"), oc.Ref, strs(m, "chargeDimensionKeys")); err != nil {
		return fmt.Errorf("%w: %w", ErrChargeDimensionSet, err)
	}
	return nil
}
