package metering

import (
	"context"
	"errors"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/coreread"
)

// economicIdentityCredits is SettlementEconomicIdentity@1 kind credits.
const economicIdentityCredits = "credits"

// economicIdentity reads the RunAdmissionManifest the eligibility fact cites
// (Core's readRunAdmissionManifest@1, exact quadruple, tenant and run) and
// returns the economic identity it froze (review finding 15: never a
// hard-coded one). The manifest freezes a credits reservation
// (reservedCredits) and no other identity, so credits is what it yields; the
// manifest must name the fact's reservation and account. Unavailable or
// not_found → retryable; conflicting → the owner's conflict (no Blocked@1
// cause exists for Core's manifest: nothing is written); a manifest for
// another reservation or account is Metering's own conflict.
func (p *Processor) economicIdentity(ctx context.Context, src eligibilitySource, fact *contract.ExecutionEligibilityFact) (settlement.EconomicIdentity, error) {
	req := coreread.RunAdmissionManifestRead{ContractVersion: coreread.ReadRunAdmissionManifestV1,
		Audience: coreread.AudienceMeteringSettlementInput,
		Tenant:   contract.Tenant{Kind: src.TenantKind, TenantID: src.TenantID, WorkspaceID: src.WorkspaceID, ProjectID: src.ProjectID},
		RunID:    src.RunID, Manifest: fact.RunAdmissionManifest}
	res, err := p.reads.ReadRunAdmissionManifest(ctx, req)
	switch {
	case err != nil && errors.Is(err, ownerread.ErrInvalidRequest):
		return settlement.EconomicIdentity{}, &conflict{stage: "eligibility_basis", reason: "admission_manifest_read_invalid", candidate: manifestReadDoc(req)}
	case err != nil:
		return settlement.EconomicIdentity{}, retryable("admission manifest read: %v", err)
	case res.Answer == ownerread.NotFound:
		return settlement.EconomicIdentity{}, retryable("admission manifest %s not found", fact.RunAdmissionManifest.Ref)
	case res.Answer != ownerread.Found:
		return settlement.EconomicIdentity{}, ownerConflict("core_admission_manifest", res.Reason)
	}
	m := res.Value
	if m.BillingReservationID != fact.BillingReservationID || m.BillingAccountID != fact.BillingAccountID || m.RunID != fact.RunID {
		return settlement.EconomicIdentity{}, &conflict{stage: "eligibility_basis", reason: "admission_manifest_differs", candidate: m.ToJSON()}
	}
	return settlement.EconomicIdentity{Kind: economicIdentityCredits}, nil
}

func manifestReadDoc(r coreread.RunAdmissionManifestRead) map[string]any {
	m := map[string]any{"contractVersion": r.ContractVersion, "audience": r.Audience, "runId": r.RunID,
		"tenantKind": r.Tenant.Kind, "tenantId": r.Tenant.TenantID, "workspaceId": r.Tenant.WorkspaceID}
	if r.Tenant.ProjectID != "" {
		m["projectId"] = r.Tenant.ProjectID
	}
	r.Manifest.Put(m, settlement.PrefixRunAdmissionManifest)
	return m
}
