package billingtest

import (
	"time"

	"github.com/google/uuid"

	"github.com/oceanway/core/contracts/reconciliation"
)

// Chain is a resolution command chain built the way Operations builds it
// (request → preview → approval → JIT → candidate → decision), for tests of
// the consumers of its candidate and decision.
type Chain struct {
	Request   *reconciliation.CommandRequest
	Preview   *reconciliation.ImpactPreview
	Approval  *reconciliation.Approval
	JIT       *reconciliation.JitActivation
	Candidate *reconciliation.Candidate
	Decision  *reconciliation.Decision
}

// BuildChain seals a chain for case c, requested (and executed) by
// requester and approved by approver, whose JIT window opens at now.
func BuildChain(c reconciliation.Case, requester, approver, workload string, now time.Time) (*Chain, error) {
	now = now.UTC().Truncate(time.Microsecond)
	ev := []reconciliation.EvidenceReference{{EvidenceKind: "billing_finalization_case", Object: c.Identity}}
	var err error
	seal := func(x reconciliation.Sealed, prefix string) {
		if err == nil {
			_, err = reconciliation.SealAddressed(x, prefix)
		}
	}
	ch := &Chain{}
	ch.Request = &reconciliation.CommandRequest{CommandRequestOperationID: uuid.NewString(), Case: c,
		RequesterWorkforcePrincipalID: requester, Evidence: ev, Justification: "the owner fixed the conflicting usage", RequestedAt: now}
	seal(ch.Request, "frcr-")
	ch.Preview = &reconciliation.ImpactPreview{CommandRequest: ch.Request.Request, PreviewedAt: now}
	seal(ch.Preview, "acip-")
	ch.Approval = &reconciliation.Approval{CommandRequest: ch.Request.Request, ImpactPreview: ch.Preview.Preview,
		RequesterWorkforcePrincipalID: requester, ApproverWorkforcePrincipalID: approver, ApprovedAt: now}
	seal(ch.Approval, "acap-")
	ch.JIT = &reconciliation.JitActivation{ActorWorkforcePrincipalID: requester, CommandRequest: ch.Request.Request,
		NotBefore: now, ExpiresAt: now.Add(30 * time.Minute), ActivatedAt: now}
	seal(ch.JIT, "acja-")
	ch.Candidate = &reconciliation.Candidate{CommandRequest: ch.Request.Request, ImpactPreview: ch.Preview.Preview,
		Approval: ch.Approval.Approval, JitActivation: ch.JIT.Activation, ActorWorkforcePrincipalID: requester,
		BoundWorkload: workload, Case: c, Evidence: ev, CreatedAt: now}
	seal(ch.Candidate, "acc-")
	ch.Decision = &reconciliation.Decision{Candidate: ch.Candidate.Candidate, CommandRequest: ch.Request.Request, Case: c,
		ActorWorkforcePrincipalID: requester, Evidence: ev, DecidedAt: now}
	seal(ch.Decision, "frcd-")
	if err != nil {
		return nil, err
	}
	return ch, nil
}

// Claims are the grant claims Core would issue for the chain.
func (ch *Chain) Claims(issuer string, iat time.Time, lifetime time.Duration) *reconciliation.GrantClaims {
	iat = iat.UTC().Truncate(time.Second)
	return &reconciliation.GrantClaims{Issuer: issuer, Subject: ch.Candidate.ActorWorkforcePrincipalID, JTI: uuid.NewString(),
		IssuedAt: iat, NotBefore: iat, ExpiresAt: iat.Add(lifetime), BoundWorkload: ch.Candidate.BoundWorkload,
		CommandRequest: ch.Request.Request, Candidate: ch.Candidate.Candidate, Decision: ch.Decision.Decision,
		ResolutionOperationID: ch.Decision.ResolutionOperationID(), Case: ch.Decision.Case, Evidence: ch.Decision.Evidence}
}
