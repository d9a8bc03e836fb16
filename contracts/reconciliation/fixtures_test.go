package reconciliation_test

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/digest"
	rc "github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/contracts/strict"
)

var at = time.Date(2026, 3, 2, 9, 0, 0, 250000000, time.UTC)

const (
	tenantID    = "0195f4a8-0000-7000-8000-000000000001"
	workspaceID = "0195f4a8-0000-7000-8000-000000000002"
	projectID   = "0195f4a8-0000-7000-8000-000000000003"
	account     = "0195f4a8-0000-7000-8000-000000000040"
	reservation = "0195f4a8-0000-7000-8000-000000000041"
	run         = "0195f4a8-0000-7000-8000-000000000020"
	fence       = "0195f4a8-0000-7000-8000-000000000042"
	gateway     = "admin.command-gateway"
	issuer      = "core.command-grants"
)

func fq(ref string, fill byte) strict.Quadruple {
	d := make([]byte, 64)
	for i := range d {
		d[i] = fill
	}
	return strict.Quadruple{Ref: ref, SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: string(d)}
}

// Stages of a chain, in build order.
const (
	stIdentity = "identity"
	stRequest  = "request"
	stPreview  = "preview"
	stApproval = "approval"
	stJit      = "jit"
	stCand     = "candidate"
	stDec      = "decision"
	stClaims   = "claims"
	stExchange = "exchange"
	stApplied  = "applied"
)

// chain is one resolution command chain, sealed object by object.
type chain struct {
	identity *rc.CaseIdentityReservation
	req      *rc.CommandRequest
	preview  *rc.ImpactPreview
	approval *rc.Approval
	jit      *rc.JitActivation
	cand     *rc.Candidate
	dec      *rc.Decision
	claims   *rc.GrantClaims
	jws      string
	exchange *rc.GrantExchangeResult
	applied  *rc.Applied
}

type variant struct {
	generation          int64
	project             string
	requester, approver string
	evidence            []rc.EvidenceReference
}

var (
	firstGeneration = variant{generation: 1, requester: "workforce:alice@example.com", approver: "workforce:bob@example.com",
		evidence: []rc.EvidenceReference{
			{EvidenceKind: "settlement_input_snapshot", Object: fq("sis-2", 'b')},
			{EvidenceKind: "billing_finalization_decision", Object: fq("bfd-1", 'a')},
			{EvidenceKind: "settlement_input_snapshot", Object: fq("sis-1", 'c')},
		}}
	secondGeneration = variant{generation: 2, project: projectID, requester: "workforce:carol@example.com", approver: "workforce:dan@example.com",
		evidence: []rc.EvidenceReference{{EvidenceKind: "gateway_evidence_availability_snapshot", Object: fq("gas-7", 'd')}}}
)

// buildChain builds and seals v's chain in order. edit (may be nil) runs on
// each object after it is filled and before it is sealed, so every later
// object binds the edited one: what a forger who reseals the rest would get.
func buildChain(t testing.TB, v variant, edit func(stage string, c *chain)) *chain {
	t.Helper()
	if edit == nil {
		edit = func(string, *chain) {}
	}
	seal := func(stage string, x rc.Sealed, refPrefix string, c *chain) {
		t.Helper()
		edit(stage, c)
		_, err := rc.SealAddressed(x, refPrefix)
		require.NoError(t, err, stage)
	}
	c := &chain{}
	evidence := append([]rc.EvidenceReference(nil), v.evidence...)
	rc.SortEvidence(evidence)
	c.identity = &rc.CaseIdentityReservation{
		Tenant:           billing.Tenant{Kind: "organization", TenantID: tenantID, WorkspaceID: workspaceID, ProjectID: v.project},
		BillingAccountID: account, BillingReservationID: reservation, RunID: run, FenceID: fence,
		ReconciliationCaseRef: rc.ReconciliationCaseRef(fence, v.generation), ReconciliationGeneration: v.generation,
		CaseRequestOperationID: rc.CaseRequestOperationID(fence, v.generation), ReservedAt: at,
	}
	if v.generation > 1 {
		c.identity.Predecessor = &rc.Predecessor{ReconciliationCaseRef: rc.ReconciliationCaseRef(fence, v.generation-1),
			ReconciliationGeneration: v.generation - 1, Identity: fq("fcir-previous", '9')}
	}
	seal(stIdentity, c.identity, "fcir-", c)

	c.req = &rc.CommandRequest{CommandRequestOperationID: "0195f4a8-0000-7000-8000-0000000000a1", Case: c.identity.Case(),
		RequesterWorkforcePrincipalID: v.requester, Evidence: evidence,
		Justification: "Metering corrected the usage of attempt 60; re-read the owners.", RequestedAt: at.Add(time.Minute)}
	seal(stRequest, c.req, "frcr-", c)
	c.preview = &rc.ImpactPreview{CommandRequest: c.req.Request, PreviewedAt: at.Add(2 * time.Minute)}
	seal(stPreview, c.preview, "acip-", c)
	c.approval = &rc.Approval{CommandRequest: c.req.Request, ImpactPreview: c.preview.Preview,
		RequesterWorkforcePrincipalID: v.requester, ApproverWorkforcePrincipalID: v.approver, ApprovedAt: at.Add(3 * time.Minute)}
	seal(stApproval, c.approval, "acap-", c)
	c.jit = &rc.JitActivation{ActorWorkforcePrincipalID: v.requester, CommandRequest: c.req.Request,
		NotBefore: at.Add(4 * time.Minute), ExpiresAt: at.Add(34 * time.Minute), ActivatedAt: at.Add(4 * time.Minute)}
	seal(stJit, c.jit, "acja-", c)
	c.cand = &rc.Candidate{CommandRequest: c.req.Request, ImpactPreview: c.preview.Preview, Approval: c.approval.Approval,
		JitActivation: c.jit.Activation, ActorWorkforcePrincipalID: v.requester, BoundWorkload: gateway, Case: c.req.Case,
		Evidence: evidence, CreatedAt: at.Add(5 * time.Minute)}
	seal(stCand, c.cand, "acc-", c)
	c.dec = &rc.Decision{Candidate: c.cand.Candidate, CommandRequest: c.cand.CommandRequest, Case: c.cand.Case,
		ActorWorkforcePrincipalID: c.cand.ActorWorkforcePrincipalID, Evidence: c.cand.Evidence, DecidedAt: at.Add(6 * time.Minute)}
	seal(stDec, c.dec, "frcd-", c)

	iat := at.Add(7 * time.Minute).Truncate(time.Second)
	c.claims = &rc.GrantClaims{Issuer: issuer, Subject: c.cand.ActorWorkforcePrincipalID, JTI: "0195f4a8-0000-7000-8000-0000000000b1",
		IssuedAt: iat, NotBefore: iat, ExpiresAt: iat.Add(rc.MaxGrantLifetime), BoundWorkload: c.cand.BoundWorkload,
		CommandRequest: c.cand.CommandRequest, Candidate: c.cand.Candidate, Decision: c.dec.Decision,
		ResolutionOperationID: c.dec.ResolutionOperationID(), Case: c.dec.Case, Evidence: c.dec.Evidence}
	edit(stClaims, c)
	body, err := c.claims.Marshal()
	require.NoError(t, err)
	// Not a real signature: signing is Core's; the tests only need stable bytes.
	c.jws = "eyJhbGciOiJFZERTQSJ9." + base64.RawURLEncoding.EncodeToString(body) + ".c2lnbmF0dXJl"

	op, err := rc.CommandGrantExchangeOperationID("https://idp.example.com", "assertion-7f3a")
	require.NoError(t, err)
	c.exchange = &rc.GrantExchangeResult{OperationID: op, ActorAssertionIssuer: "https://idp.example.com", ActorAssertionJTI: "assertion-7f3a",
		ActorWorkforcePrincipalID: c.claims.Subject, Candidate: c.claims.Candidate, CommandRequest: c.claims.CommandRequest,
		Decision: c.claims.Decision, BoundWorkload: c.claims.BoundWorkload, GrantJTI: c.claims.JTI, GrantSHA256: rc.GrantSHA256(c.jws),
		GrantExpiresAt: c.claims.ExpiresAt, ExchangedAt: iat}
	seal(stExchange, c.exchange, "cger-", c)
	c.applied = &rc.Applied{ResolutionOperationID: c.claims.ResolutionOperationID, Case: c.claims.Case,
		ActorWorkforcePrincipalID: c.claims.Subject, CommandRequest: c.claims.CommandRequest, Candidate: c.claims.Candidate,
		Decision: c.claims.Decision, GrantJTI: c.claims.JTI, GrantSHA256: rc.GrantSHA256(c.jws), Evidence: c.claims.Evidence,
		FinalizationFenceRevision: 3 + v.generation, AppliedAt: iat.Add(time.Second)}
	seal(stApplied, c.applied, "frca-", c)
	return c
}

// now is inside both chains' JIT windows.
var now = at.Add(10 * time.Minute)
