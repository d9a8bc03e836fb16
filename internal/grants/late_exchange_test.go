package grants_test

import (
	"context"
	"crypto/ed25519"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/grants"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/operationsread"
	"github.com/oceanway/core/internal/workload"
)

// lateDecisions is Operations' answer at the late issuing boundary.
type lateDecisions struct {
	mu     sync.Mutex
	answer ownerread.Answer
	reads  []operationsread.LateDecisionRead
}

func (d *lateDecisions) ReadLateSettlementCommandDecision(_ context.Context, req operationsread.LateDecisionRead) (ownerread.Answer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reads = append(d.reads, req)
	return d.answer, nil
}

// lateChain builds and seals a late settlement command chain (alice
// requests and executes, bob approves) for one exposure.
func lateChain(t *testing.T, now time.Time) *grants.LateExchangeRequest {
	t.Helper()
	now = now.UTC().Truncate(time.Microsecond)
	dim := billingc.SettlementDimension{BillingReservationID: uuid.NewString(), BillingAccountID: uuid.NewString(), RunID: uuid.NewString(),
		RunStepID: uuid.NewString(), ExecutionAttemptID: uuid.NewString(), ChargeDimensionKey: "output_tokens",
		EconomicIdentity: envelope.SettlementEconomicIdentityV1{Kind: "credits"}}
	dimID := dim.SettlementDimensionID()
	kase := reconciliation.LateCase{ReconciliationCaseRef: reconciliation.LateSettlementCaseRef(dimID, 1), CaseGeneration: 1,
		Identity:  strict.Quadruple{Ref: "lcir-1", SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: strings.Repeat("ab", 32)},
		Dimension: dim}
	exposure := reconciliation.LateExposureRef{LateSettlementExposureID: billingc.LateSettlementExposureID(dimID, 2), SettlementStateRevision: 2,
		Exposure: strict.Quadruple{Ref: "lse-1", SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: strings.Repeat("cd", 32)}}
	ev := []reconciliation.EvidenceReference{{EvidenceKind: "late_settlement_case", Object: kase.Identity}}
	seal := func(x reconciliation.Sealed, prefix string) {
		t.Helper()
		_, err := reconciliation.SealAddressed(x, prefix)
		require.NoError(t, err)
	}
	r := &grants.LateExchangeRequest{Workload: gateway}
	r.Request = &reconciliation.LateCommandRequest{CommandRequestOperationID: uuid.NewString(), Case: kase, Exposure: exposure,
		RequesterWorkforcePrincipalID: alice, Evidence: ev, Justification: "the customer agreed", RequestedAt: now}
	seal(r.Request, "lscr-")
	r.Preview = &reconciliation.LateImpactPreview{CommandRequest: r.Request.Request, Exposure: exposure, PreviewedAt: now}
	seal(r.Preview, "lscp-")
	r.Approval = &reconciliation.LateApproval{CommandRequest: r.Request.Request, ImpactPreview: r.Preview.Preview,
		RequesterWorkforcePrincipalID: alice, ApproverWorkforcePrincipalID: bob, ApprovedAt: now}
	seal(r.Approval, "lsca-")
	r.JIT = &reconciliation.LateJitActivation{ActorWorkforcePrincipalID: alice, CommandRequest: r.Request.Request,
		NotBefore: now, ExpiresAt: now.Add(30 * time.Minute), ActivatedAt: now}
	seal(r.JIT, "lscj-")
	r.Candidate = &reconciliation.LateCandidate{CommandRequest: r.Request.Request, ImpactPreview: r.Preview.Preview,
		Approval: r.Approval.Approval, JitActivation: r.JIT.Activation, ActorWorkforcePrincipalID: alice, BoundWorkload: gateway,
		Case: kase, Exposure: exposure, Evidence: ev, CreatedAt: now}
	seal(r.Candidate, "lscc-")
	r.Decision = &reconciliation.LateDecision{Candidate: r.Candidate.Candidate, CommandRequest: r.Request.Request, Case: kase,
		Exposure: exposure, ActorWorkforcePrincipalID: alice, Evidence: ev, DecidedAt: now}
	seal(r.Decision, "lscd-")
	return r
}

func (f *fixture) lateRequest(t *testing.T, actor string) (grants.LateExchangeRequest, *lateDecisions) {
	t.Helper()
	r := lateChain(t, f.now)
	a, err := f.idp.Assert(actor, time.Minute)
	require.NoError(t, err)
	r.Assertion = a
	if f.x.LateDecisions == nil {
		f.x.LateDecisions = &lateDecisions{answer: ownerread.Found}
	}
	return *r, f.x.LateDecisions.(*lateDecisions)
}

// OP-1, BI-2 (issue 32; OP-1.late-exchange-replay-conflict): Core exchanges
// the operator's assertion for a single-use late settlement command grant
// binding the whole late chain, after Operations confirmed its decision at
// the issuing boundary. The grant verifies as LateGrantClaims (CheckLateGrant
// holds) and never as a finalization grant. Operation first: the same
// assertion and command get the first grant back after the assertion
// expired; the same assertion for another late command, or for a
// finalization resolution, is refused.
func TestOP1LateGrantExchangeIsOperationFirst(t *testing.T) {
	t.Parallel()
	f := setup(t)
	req, ops := f.lateRequest(t, alice)
	first, err := f.x.ExchangeLate(t.Context(), req)
	require.NoError(t, err)
	require.False(t, first.Replayed)
	require.Len(t, ops.reads, 1)
	require.Equal(t, operationsread.LateDecisionRead{Decision: req.Decision.Decision, Candidate: req.Candidate.Candidate,
		CaseRef: req.Decision.Case.ReconciliationCaseRef, Generation: 1}, ops.reads[0])
	claims, err := f.verifier.VerifyLateGrant(first.Grant)
	require.NoError(t, err)
	require.NoError(t, reconciliation.CheckLateGrant(claims, req.Candidate, req.Decision))
	require.Equal(t, req.Decision.CommandOperationID(), claims.CommandOperationID)
	_, err = f.verifier.VerifyGrant(first.Grant)
	require.ErrorIs(t, err, grants.ErrGrant, "a late grant never verifies as a finalization grant")

	f.now = f.now.Add(time.Hour) // the assertion expired meanwhile
	again, err := f.x.ExchangeLate(t.Context(), req)
	require.NoError(t, err)
	require.True(t, again.Replayed)
	require.Equal(t, first.Grant, again.Grant)

	other, _ := f.lateRequest(t, alice)
	other.Assertion = req.Assertion
	_, err = f.x.ExchangeLate(t.Context(), other)
	require.ErrorIs(t, err, grants.ErrExchangeConflict, "another late command")
	fin := f.request(t, alice)
	fin.Assertion = req.Assertion
	_, err = f.x.Exchange(t.Context(), fin)
	require.ErrorIs(t, err, grants.ErrExchangeConflict, "a finalization command with the late assertion")
}

// OP-1 (issue 32; OP-1.late-grant-decision-not-current, OP-1.late-grant-issuer):
// the late exchange refuses, writing nothing: Operations answering
// not_found or conflicting (or not wired), an actor who is not the
// candidate's, a caller that is not the bound workload, a tampered chain.
// A finalization grant never verifies as a late grant, nor one of another
// issuer.
func TestOP1LateGrantExchangeRefusals(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, err := f.x.ExchangeLate(t.Context(), *lateChain(t, f.now))
	require.Error(t, err, "no assertion")

	unwired := f.x
	req, ops := f.lateRequest(t, alice)
	unwired.LateDecisions = nil
	_, err = unwired.ExchangeLate(t.Context(), req)
	require.ErrorIs(t, err, grants.ErrDecisionNotCurrent)
	for _, ans := range []ownerread.Answer{ownerread.NotFound, ownerread.Conflicting} {
		ops.answer = ans
		req, _ := f.lateRequest(t, alice)
		_, err = f.x.ExchangeLate(t.Context(), req)
		require.ErrorIs(t, err, grants.ErrDecisionNotCurrent, string(ans))
	}
	ops.answer = ownerread.Found

	bobs, _ := f.lateRequest(t, bob)
	_, err = f.x.ExchangeLate(t.Context(), bobs)
	require.ErrorIs(t, err, grants.ErrNotAuthorized, "bob approved; alice executes")
	wrongCaller, _ := f.lateRequest(t, alice)
	wrongCaller.Workload = "owner.billing"
	_, err = f.x.ExchangeLate(t.Context(), wrongCaller)
	require.ErrorIs(t, err, grants.ErrNotAuthorized)
	tampered, _ := f.lateRequest(t, alice)
	tampered.Decision.Decision.Digest = tampered.Candidate.Candidate.Digest
	_, err = f.x.ExchangeLate(t.Context(), tampered)
	require.ErrorIs(t, err, grants.ErrNotAuthorized)

	var n int
	require.NoError(t, f.admin.QueryRow(t.Context(), `SELECT count(*) FROM grants.command_grant_exchanges`).Scan(&n))
	require.Zero(t, n)

	fin, err := f.x.Exchange(t.Context(), f.request(t, alice))
	require.NoError(t, err)
	_, err = f.verifier.VerifyLateGrant(fin.Grant)
	require.ErrorIs(t, err, grants.ErrGrant, "a finalization grant never verifies as a late grant")

	priv, pub, err := newKey()
	require.NoError(t, err)
	foreign, err := grants.NewSigner("elsewhere.grants", priv)
	require.NoError(t, err)
	good, _ := f.lateRequest(t, alice)
	claims := &reconciliation.LateGrantClaims{Issuer: "elsewhere.grants", Subject: alice, JTI: uuid.NewString(),
		IssuedAt: f.now.UTC().Truncate(time.Second), NotBefore: f.now.UTC().Truncate(time.Second),
		ExpiresAt: f.now.UTC().Truncate(time.Second).Add(time.Minute), BoundWorkload: gateway,
		CommandRequest: good.Request.Request, Candidate: good.Candidate.Candidate, Decision: good.Decision.Decision,
		CommandOperationID: good.Decision.CommandOperationID(), Case: good.Decision.Case, Exposure: good.Decision.Exposure,
		Evidence: good.Decision.Evidence}
	jws, err := foreign.SignLate(claims)
	require.NoError(t, err)
	trusting, err := grants.NewVerifier("core.grants", pub)
	require.NoError(t, err)
	_, err = trusting.VerifyLateGrant(jws)
	require.ErrorIs(t, err, grants.ErrGrant, "another issuer")
}

func newKey() (priv ed25519.PrivateKey, pub ed25519.PublicKey, err error) { return workload.Generate() }
