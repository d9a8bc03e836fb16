package grants

import (
	"context"
	"errors"
	"fmt"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/uuid"

	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/operationsread"
)

// LateExchangeRequest is one grant exchange for a late settlement command
// (audience billing_late_settlement_command): the operator's actor
// assertion, the calling workload and Operations' whole late chain.
type LateExchangeRequest struct {
	Assertion string
	// Workload is the calling workload; it must be the candidate's bound workload.
	Workload  string
	Request   *reconciliation.LateCommandRequest
	Preview   *reconciliation.LateImpactPreview
	Approval  *reconciliation.LateApproval
	JIT       *reconciliation.LateJitActivation
	Candidate *reconciliation.LateCandidate
	Decision  *reconciliation.LateDecision
}

// ExchangeLate exchanges an actor assertion for a single-use late settlement
// command grant whose claims are reconciliation.LateGrantClaims. Operation
// first, like Exchange and in the same table: the exchange operation
// derives from the assertion's iss and jti, so one assertion buys one grant
// whatever its audience; the same late command gets the first grant back,
// any other command (a finalization resolution included) is
// ErrExchangeConflict. Otherwise the assertion must be valid now and name
// the candidate's actor, the caller must be the bound workload,
// reconciliation.CheckLateAuthorization must hold at now, and Operations
// must confirm the decision of an open case generation at this boundary
// (LateDecisions); the signed claims must pass reconciliation.CheckLateGrant.
//
// The stored CommandGrantExchangeResult@1 carries the late request,
// candidate and decision quadruples in its request, candidate and decision
// slots (their kinds' own ref prefixes tell them apart).
func (x Exchanger) ExchangeLate(ctx context.Context, req LateExchangeRequest) (Exchanged, error) {
	if req.Candidate == nil || req.Decision == nil || req.Request == nil {
		if _, _, err := x.assertionOperation(req.Assertion); err != nil {
			return Exchanged{}, err
		}
		return Exchanged{}, fmt.Errorf("%w: late request, candidate and decision are required", ErrNotAuthorized)
	}
	a, op, stored, err := x.begin(ctx, req.Assertion)
	if err != nil || stored != nil {
		if err != nil {
			return Exchanged{}, err
		}
		return replayLateExchange(*stored, a, req)
	}
	now := x.now()
	if err := authorizeActor(a, now, req.Candidate.ActorWorkforcePrincipalID, req.Candidate.BoundWorkload, req.Workload); err != nil {
		return Exchanged{}, err
	}
	if err := reconciliation.CheckLateAuthorization(req.Request, req.Preview, req.Approval, req.JIT, req.Candidate, req.Decision, now); err != nil {
		return Exchanged{}, fmt.Errorf("%w: %w", ErrNotAuthorized, err)
	}
	if x.LateDecisions == nil {
		return Exchanged{}, fmt.Errorf("%w: Operations' late decision read is not wired", ErrDecisionNotCurrent)
	}
	c := req.Decision.Case
	ans, err := x.LateDecisions.ReadLateSettlementCommandDecision(ctx, operationsread.LateDecisionRead{
		Decision: req.Decision.Decision, Candidate: req.Candidate.Candidate, CaseRef: c.ReconciliationCaseRef, Generation: c.CaseGeneration})
	if err != nil {
		return Exchanged{}, fmt.Errorf("read Operations' late decision: %w", err)
	}
	// guard OP-1.late-grant-decision-not-current
	if ans != ownerread.Found {
		return Exchanged{}, fmt.Errorf("%w: Operations answered %s", ErrDecisionNotCurrent, ans)
	}
	iat := now.UTC().Truncate(time.Second)
	claims := &reconciliation.LateGrantClaims{Issuer: x.Signer.Issuer(), Subject: a.Subject, JTI: uuid.NewString(),
		IssuedAt: iat, NotBefore: iat, ExpiresAt: iat.Add(x.lifetime()), BoundWorkload: req.Candidate.BoundWorkload,
		CommandRequest: req.Request.Request, Candidate: req.Candidate.Candidate, Decision: req.Decision.Decision,
		CommandOperationID: req.Decision.CommandOperationID(), Case: c, Exposure: req.Decision.Exposure, Evidence: req.Decision.Evidence}
	if err := reconciliation.CheckLateGrant(claims, req.Candidate, req.Decision); err != nil {
		return Exchanged{}, fmt.Errorf("%w: %w", ErrNotAuthorized, err)
	}
	jws, err := x.Signer.SignLate(claims)
	if err != nil {
		return Exchanged{}, err
	}
	res := &reconciliation.GrantExchangeResult{OperationID: op, ActorAssertionIssuer: a.Issuer, ActorAssertionJTI: a.JTI,
		ActorWorkforcePrincipalID: a.Subject, Candidate: claims.Candidate, CommandRequest: claims.CommandRequest,
		Decision: claims.Decision, BoundWorkload: claims.BoundWorkload, GrantJTI: claims.JTI,
		GrantSHA256: reconciliation.GrantSHA256(jws), GrantExpiresAt: claims.ExpiresAt, ExchangedAt: now.UTC().Truncate(time.Microsecond)}
	body, err := reconciliation.SealAddressed(res, RefPrefixExchangeResult)
	if err != nil {
		return Exchanged{}, err
	}
	inserted, err := x.insert(ctx, res, jws, body)
	if err != nil {
		return Exchanged{}, err
	}
	if !inserted {
		stored, err := x.byOperation(ctx, op)
		if err != nil {
			return Exchanged{}, err
		}
		return replayLateExchange(stored, a, req)
	}
	return Exchanged{Grant: jws, Result: res}, nil
}

// replayLateExchange answers an exchange operation that committed before:
// the same actor, workload, late request, candidate and decision get the
// first grant; anything else is ErrExchangeConflict.
func replayLateExchange(s storedExchange, a *ActorAssertion, req LateExchangeRequest) (Exchanged, error) {
	r := s.result
	// guard OP-1.late-exchange-replay-conflict
	if r.ActorWorkforcePrincipalID != a.Subject || r.BoundWorkload != req.Workload || r.Candidate != req.Candidate.Candidate ||
		r.CommandRequest != req.Request.Request || r.Decision != req.Decision.Decision {
		return Exchanged{}, fmt.Errorf("%w: operation %s granted candidate %s", ErrExchangeConflict, r.OperationID, r.Candidate.Ref)
	}
	if reconciliation.GrantSHA256(s.grant) != r.GrantSHA256 {
		return Exchanged{}, errors.New("grants: the stored grant does not match its result")
	}
	return Exchanged{Grant: s.grant, Result: r, Replayed: true}, nil
}

// SignLate returns the compact JWS of late settlement command claims
// (whose Issuer must be the signer's).
func (s *Signer) SignLate(c *reconciliation.LateGrantClaims) (string, error) {
	if c.Issuer != s.issuer {
		return "", fmt.Errorf("grants: claims issued by %q, signer is %q", c.Issuer, s.issuer)
	}
	payload, err := c.Marshal()
	if err != nil {
		return "", err
	}
	jws, err := s.signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("grants: sign: %w", err)
	}
	return jws.CompactSerialize()
}

// LateGrantVerifier is what Billing's late settlement command needs of Core's
// grants (Verifier implements it): the verified claims of a late settlement
// command grant, or ErrGrant.
type LateGrantVerifier interface {
	VerifyLateGrant(compact string) (*reconciliation.LateGrantClaims, error)
}

var _ LateGrantVerifier = (*Verifier)(nil)

// VerifyLateGrant verifies a late settlement command grant: signature by a
// trusted key, issuer, and claims that strictly decode as
// reconciliation.LateGrantClaims (audience billing_late_settlement_command;
// a finalization resolution grant never does). The time window and the jti
// are the consumer's to check.
func (v *Verifier) VerifyLateGrant(compact string) (*reconciliation.LateGrantClaims, error) {
	payload, err := v.verifiedPayload(compact)
	if err != nil {
		return nil, err
	}
	c, err := reconciliation.DecodeLateGrantClaims(payload)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrGrant, err)
	}
	// guard OP-1.late-grant-issuer
	if c.Issuer != v.issuer {
		return nil, fmt.Errorf("%w: issuer %q, want %q", ErrGrant, c.Issuer, v.issuer)
	}
	return c, nil
}

// verifiedPayload checks the compact JWS's one EdDSA signature against the
// trusted key its kid names and returns the payload.
func (v *Verifier) verifiedPayload(compact string) ([]byte, error) {
	jws, err := jose.ParseSignedCompact(compact, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil || len(jws.Signatures) != 1 {
		return nil, fmt.Errorf("%w: malformed: %v", ErrGrant, err)
	}
	key, ok := v.keys[jws.Signatures[0].Header.KeyID]
	if !ok {
		return nil, fmt.Errorf("%w: unknown key id", ErrGrant)
	}
	payload, err := jws.Verify(key)
	if err != nil {
		return nil, fmt.Errorf("%w: signature: %v", ErrGrant, err)
	}
	return payload, nil
}
