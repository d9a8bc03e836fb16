package reconciliation

import (
	"errors"
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/strict"
)

// Errors of the cross-object checks.
var (
	// ErrChainMismatch: two objects of the chain disagree on a binding
	// (a quadruple, the actor, the case identity, the evidence set), or an
	// object's own digest does not recompute. *ChainMismatchError names it.
	ErrChainMismatch = errors.New("reconciliation: command chain binding does not hold")
	// ErrJitExpired: now is outside the activation window [notBefore, expiresAt)
	// (expired, or not active yet).
	ErrJitExpired = errors.New("reconciliation: JIT activation is not active now")
)

// ChainMismatchError names the binding that does not hold, as
// "<object>.<jsonField>" (e.g. "candidate.actorWorkforcePrincipalId").
type ChainMismatchError struct{ Binding string }

func (e *ChainMismatchError) Error() string { return ErrChainMismatch.Error() + ": " + e.Binding }
func (e *ChainMismatchError) Unwrap() error { return ErrChainMismatch }

// CheckChain verifies every binding between the objects Operations decides
// on, in chain order: each object's digest recomputes; the preview, the
// approval and the activation name the request (the approval also the
// preview); nobody approves their own command (ErrSelfApproval); the
// candidate names all four and repeats the request's requester as actor, its
// case identity and its evidence set; the activation's actor is the
// candidate's and its window contains now (ErrJitExpired); the decision
// names the candidate and the request and repeats the candidate's case
// identity, actor and evidence set.
func CheckChain(req *CommandRequest, preview *ImpactPreview, approval *Approval, jit *JitActivation, cand *Candidate, dec *Decision, now time.Time) error {
	var c checker
	sealedObject(&c, "request", req)
	sealedObject(&c, "impactPreview", preview)
	sealedObject(&c, "approval", approval)
	sealedObject(&c, "jitActivation", jit)
	sealedObject(&c, "candidate", cand)
	sealedObject(&c, "decision", dec)
	if c.err != nil {
		return c.err
	}
	c.quad("impactPreview", PrefixCommandRequest, preview.CommandRequest, req.Request)

	c.quad("approval", PrefixCommandRequest, approval.CommandRequest, req.Request)
	c.quad("approval", PrefixImpactPreview, approval.ImpactPreview, preview.Preview)
	if c.err == nil && (approval.ApproverWorkforcePrincipalID == req.RequesterWorkforcePrincipalID ||
		approval.ApproverWorkforcePrincipalID == cand.ActorWorkforcePrincipalID) {
		c.err = fmt.Errorf("%w: %s", ErrSelfApproval, approval.ApproverWorkforcePrincipalID)
	}
	c.eq("approval.requesterWorkforcePrincipalId", approval.RequesterWorkforcePrincipalID, req.RequesterWorkforcePrincipalID)

	c.quad("candidate", PrefixCommandRequest, cand.CommandRequest, req.Request)
	c.quad("candidate", PrefixImpactPreview, cand.ImpactPreview, preview.Preview)
	c.quad("candidate", PrefixApproval, cand.Approval, approval.Approval)
	c.quad("candidate", PrefixJitActivation, cand.JitActivation, jit.Activation)
	c.eq("candidate.actorWorkforcePrincipalId", cand.ActorWorkforcePrincipalID, req.RequesterWorkforcePrincipalID)
	c.sameCase("candidate", cand.Case, req.Case)
	c.evidence("candidate", cand.Evidence, req.Evidence)

	c.quad("jitActivation", PrefixCommandRequest, jit.CommandRequest, req.Request)
	c.eq("jitActivation.actorWorkforcePrincipalId", jit.ActorWorkforcePrincipalID, cand.ActorWorkforcePrincipalID)
	if c.err == nil && !jit.Active(now) {
		c.err = fmt.Errorf("%w: %s not in [%s, %s)", ErrJitExpired, strict.FormatTimestamp(now),
			strict.FormatTimestamp(jit.NotBefore), strict.FormatTimestamp(jit.ExpiresAt))
	}

	c.decision(dec, cand)
	c.quad("decision", PrefixCommandRequest, dec.CommandRequest, req.Request)
	return c.err
}

// CheckGrant verifies that verified grant claims bind exactly this decision
// and its candidate: quadruples, resolution operation, sub = actor, bound
// workload, case identity and evidence set. The JWS signature, its time
// window and its jti are the verifier's to check.
func CheckGrant(claims *GrantClaims, cand *Candidate, dec *Decision) error {
	var c checker
	c.present("grant", claims != nil)
	sealedObject(&c, "candidate", cand)
	sealedObject(&c, "decision", dec)
	if c.err != nil {
		return c.err
	}
	c.decision(dec, cand)
	c.quad("grant", PrefixCommandRequest, claims.CommandRequest, cand.CommandRequest)
	c.quad("grant", PrefixCandidate, claims.Candidate, cand.Candidate)
	c.quad("grant", PrefixDecision, claims.Decision, dec.Decision)
	c.eq("grant."+fieldResolutionOperationID, claims.ResolutionOperationID, dec.ResolutionOperationID())
	c.eq("grant.sub", claims.Subject, cand.ActorWorkforcePrincipalID)
	c.eq("grant.boundWorkload", claims.BoundWorkload, cand.BoundWorkload)
	c.sameCase("grant", claims.Case, dec.Case)
	c.evidence("grant", claims.Evidence, dec.Evidence)
	return c.err
}

// CheckExchange verifies that an exchange result names exactly this grant:
// its jti, the SHA-256 of its compact JWS, its expiry, its subject, bound
// workload and quadruples.
func CheckExchange(res *GrantExchangeResult, claims *GrantClaims, grantSHA256 string) error {
	var c checker
	c.present("grant", claims != nil)
	sealedObject(&c, "exchangeResult", res)
	if c.err != nil {
		return c.err
	}
	c.eq("exchangeResult.grantJti", res.GrantJTI, claims.JTI)
	c.eq("exchangeResult.grantSha256", res.GrantSHA256, grantSHA256)
	c.eq("exchangeResult.grantExpiresAt", strict.FormatTimestamp(res.GrantExpiresAt), strict.FormatTimestamp(claims.ExpiresAt))
	c.eq("exchangeResult.actorWorkforcePrincipalId", res.ActorWorkforcePrincipalID, claims.Subject)
	c.eq("exchangeResult.boundWorkload", res.BoundWorkload, claims.BoundWorkload)
	c.quad("exchangeResult", PrefixCandidate, res.Candidate, claims.Candidate)
	c.quad("exchangeResult", PrefixCommandRequest, res.CommandRequest, claims.CommandRequest)
	c.quad("exchangeResult", PrefixDecision, res.Decision, claims.Decision)
	return c.err
}

// CheckApplied verifies that an applied fact is exactly the consumption of
// this grant: resolution operation, case identity, actor = sub, quadruples,
// grant jti and SHA-256, evidence set. Billing runs it when a replayed
// command finds the fact by its resolution operation.
func CheckApplied(fact *Applied, claims *GrantClaims, grantSHA256 string) error {
	var c checker
	c.present("grant", claims != nil)
	sealedObject(&c, "applied", fact)
	if c.err != nil {
		return c.err
	}
	c.eq("applied."+fieldResolutionOperationID, fact.ResolutionOperationID, claims.ResolutionOperationID)
	c.sameCase("applied", fact.Case, claims.Case)
	c.eq("applied.actorWorkforcePrincipalId", fact.ActorWorkforcePrincipalID, claims.Subject)
	c.quad("applied", PrefixCommandRequest, fact.CommandRequest, claims.CommandRequest)
	c.quad("applied", PrefixCandidate, fact.Candidate, claims.Candidate)
	c.quad("applied", PrefixDecision, fact.Decision, claims.Decision)
	c.eq("applied.grantJti", fact.GrantJTI, claims.JTI)
	c.eq("applied.grantSha256", fact.GrantSHA256, grantSHA256)
	c.evidence("applied", fact.Evidence, claims.Evidence)
	return c.err
}

// checker keeps the first failed binding, so a check reads as a list.
type checker struct{ err error }

func (c *checker) fail(binding string) {
	if c.err == nil {
		c.err = &ChainMismatchError{Binding: binding}
	}
}

func (c *checker) present(name string, ok bool) {
	if !ok {
		c.fail(name + " missing")
	}
}

// sealedObject: x is present, sealed, and its digest recomputes from its
// content (a binding to a quadruple means nothing otherwise).
func sealedObject[T any, P interface {
	*T
	Sealed
}](c *checker, name string, x P) {
	if c.err != nil {
		return
	}
	if x == nil {
		c.fail(name + " missing")
		return
	}
	q := x.Quad()
	d, err := DigestOf(x)
	if err != nil || q.Ref == "" || q.SchemaVersion != SchemaVersion1 || d != q.Digested() {
		c.fail(name + " digest")
	}
}

func (c *checker) quad(object, prefix string, got, want strict.Quadruple) {
	if got != want {
		c.fail(object + "." + prefix)
	}
}

func (c *checker) eq(binding, got, want string) {
	if got != want {
		c.fail(binding)
	}
}

func (c *checker) sameCase(object string, got, want Case) {
	if d := got.diff(want); d != "" {
		c.fail(object + "." + d)
	}
}

func (c *checker) evidence(object string, got, want []EvidenceReference) {
	if !EvidenceEqual(got, want) {
		c.fail(object + "." + fieldEvidence)
	}
}

// decision: the decision names the candidate and repeats its case
// identity, actor and evidence set.
func (c *checker) decision(dec *Decision, cand *Candidate) {
	c.quad("decision", PrefixCandidate, dec.Candidate, cand.Candidate)
	c.sameCase("decision", dec.Case, cand.Case)
	c.eq("decision.actorWorkforcePrincipalId", dec.ActorWorkforcePrincipalID, cand.ActorWorkforcePrincipalID)
	c.evidence("decision", dec.Evidence, cand.Evidence)
}
