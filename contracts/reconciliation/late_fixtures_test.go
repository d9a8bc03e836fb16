package reconciliation_test

import (
	"encoding/base64"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/meterfacts"
	rc "github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/contracts/strict"
)

// Stages of a late chain, in build order.
const (
	lstIdentity = "late-identity"
	lstExposure = "exposure"
	lstRequest  = "late-request"
	lstPreview  = "late-preview"
	lstApproval = "late-approval"
	lstJit      = "late-jit"
	lstCand     = "late-candidate"
	lstDec      = "late-decision"
	lstClaims   = "late-claims"
	lstFunding  = "funding"
	lstReceipt  = "receipt"
	lstResult   = "result"
	lstApplied  = "applied"
)

// lateChain is one late settlement command, sealed object by object.
type lateChain struct {
	identity *rc.LateCaseIdentityReservation
	exposure *billing.LateSettlementExposure
	req      *rc.LateCommandRequest
	preview  *rc.LateImpactPreview
	approval *rc.LateApproval
	jit      *rc.LateJitActivation
	cand     *rc.LateCandidate
	dec      *rc.LateDecision
	claims   *rc.LateGrantClaims
	jws      string
	funding  *rc.FundingDecision
	receipt  *meterfacts.SettlementInputCurrentValidationReceipt
	result   *rc.LateResult
	applied  *rc.CaseResolutionApplied
}

func (c *lateChain) all() rc.LateChain {
	return rc.LateChain{Request: c.req, Preview: c.preview, Approval: c.approval, Jit: c.jit, Candidate: c.cand, Decision: c.dec,
		Claims: c.claims, GrantSHA256: rc.GrantSHA256(c.jws), Exposure: c.exposure, Funding: c.funding, Receipt: c.receipt,
		Result: c.result, Applied: c.applied}
}

type lateVariant struct {
	generation                 int64
	project                    string
	chargeDimensionKey         string
	economicIdentity           envelope.SettlementEconomicIdentityV1
	requester, approver        string
	evidence                   []rc.EvidenceReference
	amount, before             string
	exposureRevision, fromRev  int64
	grantJTI, fundingJTI       string
	accountRevision, policyRev int64
}

var (
	// credits, case generation 1, the command at the exposure's own revision.
	lateFirst = lateVariant{generation: 1, chargeDimensionKey: "output_tokens", economicIdentity: envelope.SettlementEconomicIdentityV1{Kind: "credits"},
		requester: "workforce:alice@example.com", approver: "workforce:bob@example.com",
		evidence: []rc.EvidenceReference{
			{EvidenceKind: "late_settlement_exposure", Object: fq("lse-1", 'a')},
			{EvidenceKind: "settlement_input_snapshot", Object: fq("sis-3", 'b')},
		},
		amount: "12.5", before: "40", exposureRevision: 3, fromRev: 3,
		grantJTI: "0195f4a8-0000-7000-8000-0000000000c1", fundingJTI: "0195f4a8-0000-7000-8000-0000000000d1", accountRevision: 7, policyRev: 1}
	// money{EUR}, case generation 2 (a later exposure after generation 1
	// started resolving), the command one revision after the exposure.
	lateSecond = lateVariant{generation: 2, project: projectID, chargeDimensionKey: "gpu_seconds",
		economicIdentity: envelope.SettlementEconomicIdentityV1{Kind: "money", Currency: "EUR"},
		requester:        "workforce:carol@example.com", approver: "workforce:dan@example.com",
		evidence: []rc.EvidenceReference{{EvidenceKind: "late_settlement_exposure", Object: fq("lse-5", 'c')}},
		amount:   "0.75", before: "3", exposureRevision: 5, fromRev: 6,
		grantJTI: "0195f4a8-0000-7000-8000-0000000000c2", fundingJTI: "0195f4a8-0000-7000-8000-0000000000d2", accountRevision: 12, policyRev: 3}
)

func (v lateVariant) dimension() billing.SettlementDimension {
	return billing.SettlementDimension{BillingReservationID: reservation, BillingAccountID: account, RunID: run, RunStepID: runStep,
		ExecutionAttemptID: attempt, ChargeDimensionKey: v.chargeDimensionKey, EconomicIdentity: v.economicIdentity}
}

// lateNow is inside both late chains' JIT windows and funding validity.
var lateNow = at.Add(10 * time.Minute)

// buildLateChain builds and seals v's late chain in order. edit (may be
// nil) runs on each object after it is filled and before it is sealed, so
// every later object binds the edited one.
func buildLateChain(t testing.TB, v lateVariant, edit func(stage string, c *lateChain)) *lateChain {
	t.Helper()
	if edit == nil {
		edit = func(string, *lateChain) {}
	}
	seal := func(stage string, x rc.Sealed, refPrefix string, c *lateChain) {
		t.Helper()
		edit(stage, c)
		_, err := rc.SealAddressed(x, refPrefix)
		require.NoError(t, err, stage)
	}
	c := &lateChain{}
	evidence := append([]rc.EvidenceReference(nil), v.evidence...)
	rc.SortEvidence(evidence)
	dim := v.dimension()
	dimID := dim.SettlementDimensionID()
	c.identity = &rc.LateCaseIdentityReservation{
		Tenant:    billing.Tenant{Kind: envelope.TenantOrganization, TenantID: tenantID, WorkspaceID: workspaceID, ProjectID: v.project},
		Dimension: dim, ReconciliationCaseRef: rc.LateSettlementCaseRef(dimID, v.generation), CaseGeneration: v.generation,
		CaseRequestOperationID: rc.LateSettlementCaseRequestOperationID(dimID, v.generation), ReservedAt: at,
	}
	if v.generation > 1 {
		c.identity.Predecessor = &rc.LatePredecessor{ReconciliationCaseRef: rc.LateSettlementCaseRef(dimID, v.generation-1),
			CaseGeneration: v.generation - 1, Identity: fq("lcir-previous", '9')}
	}
	seal(lstIdentity, c.identity, "lcir-", c)

	c.exposure = &billing.LateSettlementExposure{Exposure: strict.Quadruple{Ref: "lse-" + v.chargeDimensionKey}, Dimension: dim,
		Transition: fq("bst-exposure", '7'), SettlementStateRevision: v.exposureRevision,
		SettlementInput: billing.SettlementInput{Snapshot: fq("sis-late", '8'), StateVersion: v.exposureRevision + 1},
		ExposureAmount:  v.amount, RecordedAt: at,
		Case: &billing.ExposureCase{ReconciliationCaseRef: c.identity.ReconciliationCaseRef, CaseGeneration: v.generation,
			Identity: c.identity.Reservation, CaseRequestOperationID: c.identity.CaseRequestOperationID}}
	edit(lstExposure, c)
	_, err := billing.SealSettlement(c.exposure)
	require.NoError(t, err)
	exposure := rc.ExposureRef(c.exposure)

	c.req = &rc.LateCommandRequest{CommandRequestOperationID: "0195f4a8-0000-7000-8000-0000000000e1", Case: c.identity.Case(),
		Exposure: exposure, RequesterWorkforcePrincipalID: v.requester, Evidence: evidence,
		Justification: "The customer confirmed the late usage; fund the exposure from the account.", RequestedAt: at.Add(time.Minute)}
	seal(lstRequest, c.req, "lscr-", c)
	c.preview = &rc.LateImpactPreview{CommandRequest: c.req.Request, Exposure: c.req.Exposure, PreviewedAt: at.Add(2 * time.Minute)}
	seal(lstPreview, c.preview, "lscp-", c)
	c.approval = &rc.LateApproval{CommandRequest: c.req.Request, ImpactPreview: c.preview.Preview,
		RequesterWorkforcePrincipalID: v.requester, ApproverWorkforcePrincipalID: v.approver, ApprovedAt: at.Add(3 * time.Minute)}
	seal(lstApproval, c.approval, "lsca-", c)
	c.jit = &rc.LateJitActivation{ActorWorkforcePrincipalID: v.requester, CommandRequest: c.req.Request,
		NotBefore: at.Add(4 * time.Minute), ExpiresAt: at.Add(34 * time.Minute), ActivatedAt: at.Add(4 * time.Minute)}
	seal(lstJit, c.jit, "lscj-", c)
	c.cand = &rc.LateCandidate{CommandRequest: c.req.Request, ImpactPreview: c.preview.Preview, Approval: c.approval.Approval,
		JitActivation: c.jit.Activation, ActorWorkforcePrincipalID: v.requester, BoundWorkload: gateway, Case: c.req.Case,
		Exposure: c.req.Exposure, Evidence: evidence, CreatedAt: at.Add(5 * time.Minute)}
	seal(lstCand, c.cand, "lscc-", c)
	c.dec = &rc.LateDecision{Candidate: c.cand.Candidate, CommandRequest: c.cand.CommandRequest, Case: c.cand.Case, Exposure: c.cand.Exposure,
		ActorWorkforcePrincipalID: c.cand.ActorWorkforcePrincipalID, Evidence: c.cand.Evidence, DecidedAt: at.Add(6 * time.Minute)}
	seal(lstDec, c.dec, "lscd-", c)

	iat := at.Add(7 * time.Minute).Truncate(time.Second)
	c.claims = &rc.LateGrantClaims{Issuer: issuer, Subject: c.cand.ActorWorkforcePrincipalID, JTI: v.grantJTI,
		IssuedAt: iat, NotBefore: iat, ExpiresAt: iat.Add(rc.MaxGrantLifetime), BoundWorkload: c.cand.BoundWorkload,
		CommandRequest: c.cand.CommandRequest, Candidate: c.cand.Candidate, Decision: c.dec.Decision,
		CommandOperationID: c.dec.CommandOperationID(), Case: c.dec.Case, Exposure: c.dec.Exposure, Evidence: c.dec.Evidence}
	edit(lstClaims, c)
	body, err := c.claims.Marshal()
	require.NoError(t, err)
	// Not a real signature: signing is Core's; the tests only need stable bytes.
	c.jws = "eyJhbGciOiJFZERTQSJ9." + base64.RawURLEncoding.EncodeToString(body) + ".c2lnbmF0dXJl"

	c.funding = &rc.FundingDecision{BillingAccountSourceRevision: v.accountRevision, Case: c.dec.Case, Exposure: c.dec.Exposure,
		FundingPolicyRevision: v.policyRev, FundingAmount: c.exposure.ExposureAmount, CommandOperationID: c.dec.CommandOperationID(),
		ValidFrom: iat, ValidUntil: iat.Add(10 * time.Minute), EconomicIdentity: c.dec.Case.Dimension.EconomicIdentity, JTI: v.fundingJTI, DecidedAt: iat}
	seal(lstFunding, c.funding, "fd-", c)

	c.receipt = &meterfacts.SettlementInputCurrentValidationReceipt{Receipt: strict.Quadruple{Ref: "sicvr-late-" + v.chargeDimensionKey},
		Purpose: meterfacts.PurposeLateSettlementCommand, OperationID: c.dec.CommandOperationID(), InputManifestDigest: c.exposure.Exposure.Digested(),
		SettlementDimensionID: dimID, Validated: c.exposure.SettlementInput.Snapshot, ValidatedStateVersion: c.exposure.SettlementInput.StateVersion,
		Current: true, ValidatedAt: iat.Add(time.Second)}
	edit(lstReceipt, c)
	_, err = meterfacts.Seal(c.receipt)
	require.NoError(t, err)

	c.result = &rc.LateResult{CommandOperationID: c.claims.CommandOperationID, CommandRequest: c.claims.CommandRequest,
		Candidate: c.claims.Candidate, Decision: c.claims.Decision, ActorWorkforcePrincipalID: c.claims.Subject,
		GrantSHA256: rc.GrantSHA256(c.jws), GrantJTI: c.claims.JTI, FundingDecisionJTI: c.funding.JTI, FundingDecision: c.funding.Decision,
		FundingPolicyRevision: c.funding.FundingPolicyRevision, BillingAccountSourceRevision: c.funding.BillingAccountSourceRevision,
		ValidationReceipt: c.receipt.Receipt, SettlementInput: c.exposure.SettlementInput, Case: c.claims.Case, Exposure: c.claims.Exposure,
		LedgerPostingGroupID: "0195f4a8-0000-7000-8000-0000000000f1", AdjustmentAmount: c.funding.FundingAmount,
		LedgerEconomicIdentity: c.claims.Case.Dimension.EconomicIdentity, FromSettlementStateRevision: v.fromRev,
		SettledAmountBefore: v.before, SettledAmountAfter: plus(t, v.before, c.funding.FundingAmount), CommittedAt: iat.Add(2 * time.Second)}
	seal(lstResult, c.result, "lscres-", c)

	c.applied = &rc.CaseResolutionApplied{Exposure: c.result.Exposure, Case: c.result.Case,
		ResolutionOperationID: rc.CaseResolutionOperationID(c.result.Exposure.LateSettlementExposureID, c.result.Case.CaseGeneration),
		ResolutionSource:      rc.ResolutionSourceLateCommand, Source: c.result.Result, CommandOperationID: c.result.CommandOperationID,
		ActorWorkforcePrincipalID: c.result.ActorWorkforcePrincipalID, AppliedAt: iat.Add(2 * time.Second)}
	seal(lstApplied, c.applied, "bcra-", c)
	return c
}

// plus is a + b in canonical AmountText.
func plus(t testing.TB, a, b string) string {
	t.Helper()
	x, ok := new(big.Rat).SetString(a)
	require.True(t, ok, a)
	y, ok := new(big.Rat).SetString(b)
	require.True(t, ok, b)
	return billing.FormatSettlementAmount(x.Add(x, y))
}

// mootingTransition seals the refund transition that makes c's exposure
// moot (a later correction lowered the target) and the applied fact that
// resolves the exposure by it.
func mootingTransition(t testing.TB, c *lateChain) (*billing.BillingSettlementTransition, *rc.CaseResolutionApplied) {
	t.Helper()
	e := c.exposure
	tr := &billing.BillingSettlementTransition{Transition: strict.Quadruple{Ref: "bst-moot"}, Dimension: e.Dimension,
		TransitionKind: billing.TransitionRefund, FromSettlementStateRevision: e.SettlementStateRevision,
		SettledAmountBefore: "40", TargetAmount: "38", SettledAmountAfter: "38", TransitionAmount: "2",
		PreviousSettlementInput: e.SettlementInput, SettlementInput: billing.SettlementInput{Snapshot: fq("sis-corrected", '6'), StateVersion: e.SettlementInput.StateVersion + 1},
		ValidationReceipt: fq("sicvr-moot", '5'), CausationKind: billing.TransitionCausedByTransition, CausedBy: e.Transition,
		LogicalOperationID: "0195f4a8-0000-7000-8000-0000000000f2",
		SettlementBasis:    digest.Digest{Algorithm: digest.JCSSHA256V1, Value: fq("", '4').Digest}, CommittedAt: at.Add(time.Minute)}
	_, err := billing.SealSettlement(tr)
	require.NoError(t, err)
	a := &rc.CaseResolutionApplied{Exposure: rc.ExposureRef(e), Case: c.identity.Case(),
		ResolutionOperationID: rc.CaseResolutionOperationID(e.ExposureID(), c.identity.CaseGeneration),
		ResolutionSource:      rc.ResolutionSourceTransition, Source: tr.Transition, ToSettlementStateRevision: tr.ToSettlementStateRevision(),
		AppliedAt: at.Add(time.Minute)}
	_, err = rc.SealAddressed(a, "bcra-")
	require.NoError(t, err)
	return tr, a
}
