package grants

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/operationsread"
)

// Exchange errors (none writes anything).
var (
	// ErrExchangeConflict: the assertion was exchanged before for another
	// candidate, request, decision or workload.
	ErrExchangeConflict = errors.New("grants: the actor assertion was exchanged for another command")
	// ErrNotAuthorized: the chain does not authorize this actor and
	// workload (actor ≠ assertion subject, workload ≠ bound workload, a
	// binding of the chain broken, self-approval, JIT outside its window).
	ErrNotAuthorized = errors.New("grants: the command chain does not authorize the exchange")
	// ErrDecisionNotCurrent: Operations does not hold this decision for an
	// open case generation.
	ErrDecisionNotCurrent = errors.New("grants: the decision is not Operations' current decision of an open case")
)

// ExchangeRequest is one grant exchange: the operator's actor assertion,
// the calling workload, and the whole chain the grant will bind.
type ExchangeRequest struct {
	Assertion string
	// Workload is the calling workload (the admin command gateway); it must
	// be the candidate's bound workload.
	Workload  string
	Request   *reconciliation.CommandRequest
	Preview   *reconciliation.ImpactPreview
	Approval  *reconciliation.Approval
	JIT       *reconciliation.JitActivation
	Candidate *reconciliation.Candidate
	Decision  *reconciliation.Decision
}

// Exchanged is the exchange's answer: the grant and its result.
type Exchanged struct {
	Grant  string
	Result *reconciliation.GrantExchangeResult
	// Replayed: the assertion was exchanged before for this same command;
	// the first grant is returned.
	Replayed bool
}

// Exchanger is Core's grant exchange over schema grants (pool: as
// oceanway_grants).
type Exchanger struct {
	Pool       db.Beginner
	Signer     *Signer
	Assertions *AssertionVerifier
	Decisions  operationsread.ResolutionDecisions
	// LateDecisions is Operations' read of its late settlement command
	// decisions (ExchangeLate); nil refuses every late exchange.
	LateDecisions operationsread.LateDecisions
	// Lifetime of the grants it issues (default and maximum
	// reconciliation.MaxGrantLifetime).
	Lifetime time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// RefPrefixExchangeResult prefixes a result's content-derived ref.
const RefPrefixExchangeResult = "cger-"

// Exchange exchanges an actor assertion for a single-use grant (ADR-031).
// Operation first: the exchange operation derives from the assertion's iss
// and jti; when it committed before, the same command gets the first grant
// back (whatever the time now) and any other command is
// ErrExchangeConflict. Otherwise the assertion must be valid now and name
// the candidate's actor, the caller must be the bound workload, the chain
// must hold (reconciliation.CheckChain at now) and Operations must hold the
// decision for an open case; then the grant is signed and the result
// stored.
func (x Exchanger) Exchange(ctx context.Context, req ExchangeRequest) (Exchanged, error) {
	if req.Candidate == nil || req.Decision == nil || req.Request == nil {
		if _, _, err := x.assertionOperation(req.Assertion); err != nil {
			return Exchanged{}, err
		}
		return Exchanged{}, fmt.Errorf("%w: request, candidate and decision are required", ErrNotAuthorized)
	}
	a, op, stored, err := x.begin(ctx, req.Assertion)
	if err != nil || stored != nil {
		if err != nil {
			return Exchanged{}, err
		}
		return replayExchange(*stored, a, req)
	}
	now := x.now()
	if err := authorizeActor(a, now, req.Candidate.ActorWorkforcePrincipalID, req.Candidate.BoundWorkload, req.Workload); err != nil {
		return Exchanged{}, err
	}
	if err := reconciliation.CheckChain(req.Request, req.Preview, req.Approval, req.JIT, req.Candidate, req.Decision, now); err != nil {
		return Exchanged{}, fmt.Errorf("%w: %w", ErrNotAuthorized, err)
	}
	c := req.Decision.Case
	ans, err := x.Decisions.ReadFinalizationResolutionDecision(ctx, operationsread.ResolutionDecisionRead{
		Decision: req.Decision.Decision, Candidate: req.Candidate.Candidate, CaseRef: c.ReconciliationCaseRef, Generation: c.ReconciliationGeneration})
	if err != nil {
		return Exchanged{}, fmt.Errorf("read Operations' decision: %w", err)
	}
	if ans != ownerread.Found {
		return Exchanged{}, fmt.Errorf("%w: Operations answered %s", ErrDecisionNotCurrent, ans)
	}
	iat := now.UTC().Truncate(time.Second)
	claims := &reconciliation.GrantClaims{Issuer: x.Signer.Issuer(), Subject: a.Subject, JTI: uuid.NewString(),
		IssuedAt: iat, NotBefore: iat, ExpiresAt: iat.Add(x.lifetime()), BoundWorkload: req.Candidate.BoundWorkload,
		CommandRequest: req.Request.Request, Candidate: req.Candidate.Candidate, Decision: req.Decision.Decision,
		ResolutionOperationID: req.Decision.ResolutionOperationID(), Case: c, Evidence: req.Decision.Evidence}
	jws, err := x.Signer.Sign(claims)
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
		// A concurrent exchange of the same assertion committed first.
		stored, err := x.byOperation(ctx, op)
		if err != nil {
			return Exchanged{}, err
		}
		return replayExchange(stored, a, req)
	}
	return Exchanged{Grant: jws, Result: res}, nil
}

type storedExchange struct {
	result *reconciliation.GrantExchangeResult
	grant  string
}

// assertionOperation verifies an actor assertion and derives its exchange
// operation (the same for every audience: one assertion, one grant).
func (x Exchanger) assertionOperation(assertion string) (*ActorAssertion, string, error) {
	a, err := x.Assertions.Verify(assertion)
	if err != nil {
		return nil, "", err
	}
	op, err := reconciliation.CommandGrantExchangeOperationID(a.Issuer, a.JTI)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrAssertion, err)
	}
	return a, op, nil
}

// begin is the first step of both exchanges: the assertion's operation,
// and the result already committed under it (nil when none: a first
// exchange).
func (x Exchanger) begin(ctx context.Context, assertion string) (*ActorAssertion, string, *storedExchange, error) {
	a, op, err := x.assertionOperation(assertion)
	if err != nil {
		return nil, "", nil, err
	}
	stored, err := x.byOperation(ctx, op)
	switch {
	case err == nil:
		return a, op, &stored, nil
	case errors.Is(err, pgx.ErrNoRows):
		return a, op, nil, nil
	default:
		return nil, "", nil, err
	}
}

// authorizeActor: a first exchange needs an assertion valid now that names
// the candidate's actor, called by the candidate's bound workload.
func authorizeActor(a *ActorAssertion, now time.Time, actor, boundWorkload, caller string) error {
	if !a.ValidAt(now) {
		return fmt.Errorf("%w: valid %s to %s", ErrAssertionExpired, a.IssuedAt.Format(time.RFC3339), a.ExpiresAt.Format(time.RFC3339))
	}
	switch {
	case a.Subject != actor:
		return fmt.Errorf("%w: the assertion names %q, the candidate's actor is %q", ErrNotAuthorized, a.Subject, actor)
	case caller != boundWorkload:
		return fmt.Errorf("%w: caller %q is not the bound workload %q", ErrNotAuthorized, caller, boundWorkload)
	}
	return nil
}

func (x Exchanger) byOperation(ctx context.Context, op string) (storedExchange, error) {
	var body, jws string
	err := db.WithTx(ctx, x.Pool, func(ctx context.Context, tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT result_body, grant_jws FROM grants.command_grant_exchanges
			WHERE command_grant_exchange_operation_id = $1`, op).Scan(&body, &jws)
	})
	if err != nil {
		return storedExchange{}, err
	}
	res, err := reconciliation.DecodeGrantExchangeResult([]byte(body))
	if err != nil {
		return storedExchange{}, fmt.Errorf("stored exchange result: %w", err)
	}
	return storedExchange{result: res, grant: jws}, nil
}

func (x Exchanger) insert(ctx context.Context, r *reconciliation.GrantExchangeResult, jws string, body []byte) (bool, error) {
	var n int64
	err := db.WithTx(ctx, x.Pool, func(ctx context.Context, tx pgx.Tx) error {
		q := r.Result
		tag, err := tx.Exec(ctx, `INSERT INTO grants.command_grant_exchanges (command_grant_exchange_operation_id, result_ref,
			    result_schema_version, result_digest_algorithm_version, result_digest, actor_assertion_issuer, actor_assertion_jti,
			    actor_workforce_principal_id, candidate_ref, grant_jti, grant_sha256, grant_jws, grant_expires_at, result_body, exchanged_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
			ON CONFLICT DO NOTHING`,
			r.OperationID, q.Ref, q.SchemaVersion, string(q.DigestAlgorithmVersion), q.Digest, r.ActorAssertionIssuer,
			r.ActorAssertionJTI, r.ActorWorkforcePrincipalID, r.Candidate.Ref, r.GrantJTI, r.GrantSHA256, jws,
			r.GrantExpiresAt, string(body), r.ExchangedAt)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return false, fmt.Errorf("store exchange result: %w", err)
	}
	return n == 1, nil
}

// replayExchange answers an exchange operation that committed before: the
// same actor, workload, request, candidate and decision get the first
// grant; anything else is ErrExchangeConflict.
func replayExchange(s storedExchange, a *ActorAssertion, req ExchangeRequest) (Exchanged, error) {
	r := s.result
	if r.ActorWorkforcePrincipalID != a.Subject || r.BoundWorkload != req.Workload || r.Candidate != req.Candidate.Candidate ||
		r.CommandRequest != req.Request.Request || r.Decision != req.Decision.Decision {
		return Exchanged{}, fmt.Errorf("%w: operation %s granted candidate %s", ErrExchangeConflict, r.OperationID, r.Candidate.Ref)
	}
	if reconciliation.GrantSHA256(s.grant) != r.GrantSHA256 {
		return Exchanged{}, errors.New("grants: the stored grant does not match its result")
	}
	return Exchanged{Grant: s.grant, Result: r, Replayed: true}, nil
}

func (x Exchanger) now() time.Time {
	if x.Now != nil {
		return x.Now()
	}
	return time.Now()
}

func (x Exchanger) lifetime() time.Duration {
	if x.Lifetime <= 0 || x.Lifetime > reconciliation.MaxGrantLifetime {
		return reconciliation.MaxGrantLifetime
	}
	return x.Lifetime
}
