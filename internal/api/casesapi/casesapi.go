// Package casesapi answers Operations' case operations of the platform API
// (listCases, getCase, requestCaseResolution, approveCaseResolution,
// applyCaseResolution; issue 33, OP-1) with the Finalization reconciliation
// case chain of ADR-031: the reads of internal/operations/cases and the
// commands of internal/casegateway. It is the one place the API meets the
// chain; it imports no other owner than Operations and Core's chain
// (grants, Billing's resolution through the gateway).
//
// The caller is an operator, authenticated by the middleware with the
// operator's actor assertion (Actors), never a workload token. Every
// command passes that assertion on to the gateway, which authenticates it
// again and whose owners each keep their step of the chain, idempotent:
//
//   - request: Operations' request and impact preview, idempotent by the
//     request operation, which derives from the principal and the
//     Idempotency-Key (DerivationRequestOperation): the same key can only
//     ever make one request, even without the API's stored response;
//   - approve: Operations' approval, idempotent by (request, approver);
//   - apply: Operations' decision (one per case generation), Core's grant
//     exchange (idempotent by the assertion's iss and jti) and Billing's
//     resolution (idempotent by the decision's resolution operation).
//
// The commands run in the owners' own transactions, not in the API's
// (api.TxOf): see Server.ApplyCaseResolution. The API's transaction only
// holds the key and stores the first response; a retry after a lost answer
// either replays it or runs the command again and converges on the first
// result.
package casesapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/internal/api"
	"github.com/oceanway/core/internal/api/apigen"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/casegateway"
	"github.com/oceanway/core/internal/grants"
	"github.com/oceanway/core/internal/operations/cases"
)

// DerivationRequestOperation derives a resolution command request's
// operation id from the operator's principal and the Idempotency-Key:
// Operations' request is idempotent by that operation, so the same key can
// only ever make one request, even without the API's stored response.
const DerivationRequestOperation = "api_case_request_operation@1"

// DefaultListLimit is listCases' limit when the caller names none.
const DefaultListLimit = 100

// Server is Operations' case operations (api.CaseOperations).
type Server struct {
	// Operations is the core database as oceanway_operations: the reads
	// (listCases, getCase, and telling an unknown case from a closed one).
	Operations *pgxpool.Pool
	// Gateway is the chain: Operations' commands, Core's grant exchange
	// and Billing's resolution (in process, or over HTTP when they run
	// apart).
	Gateway casegateway.Gateway
}

var _ api.CaseOperations = Server{}

// Actors authenticates operators for the middleware
// (api.ActorAuthenticator): an actor assertion of a trusted workforce
// identity provider, valid now; the principal is its subject.
type Actors struct {
	Verifier *grants.AssertionVerifier
	// Now is the clock the assertion must be valid at (default time.Now).
	Now func() time.Time
}

var _ api.ActorAuthenticator = Actors{}

// AuthenticateActor implements api.ActorAuthenticator.
func (a Actors) AuthenticateActor(assertion string) (string, error) {
	if a.Verifier == nil {
		return "", fmt.Errorf("%w: no trusted identity provider", casegateway.ErrUnauthenticated)
	}
	return casegateway.Authenticate(a.Verifier, assertion, a.Now)
}

// ListCases lists the cases of the active projection, oldest first: open
// or resolved ones, or all when state is absent.
func (s Server) ListCases(ctx context.Context, req apigen.ListCasesRequestObject) (apigen.ListCasesResponseObject, error) {
	state, limit := "", DefaultListLimit
	if req.Params.State != nil {
		state = string(*req.Params.State)
	}
	if req.Params.Limit != nil {
		limit = *req.Params.Limit
	}
	vs, err := cases.List(ctx, s.Operations, state, limit)
	if err != nil {
		return nil, err
	}
	out := apigen.CaseList{Cases: make([]apigen.Case, 0, len(vs))}
	for _, v := range vs {
		c, err := caseOf(v)
		if err != nil {
			return nil, err
		}
		out.Cases = append(out.Cases, c)
	}
	return apigen.ListCases200JSONResponse(out), nil
}

// GetCase reads one case of the active projection with its requests.
func (s Server) GetCase(ctx context.Context, req apigen.GetCaseRequestObject) (apigen.GetCaseResponseObject, error) {
	v, err := cases.Show(ctx, s.Operations, req.CaseRef)
	if errors.Is(err, cases.ErrCaseNotFound) {
		return apigen.GetCase404ApplicationProblemPlusJSONResponse(api.NewProblem(http.StatusNotFound, api.CodeNotFound, "no case "+req.CaseRef)), nil
	}
	if err != nil {
		return nil, err
	}
	c, err := caseOf(v)
	if err != nil {
		return nil, err
	}
	return apigen.GetCase200JSONResponse(c), nil
}

// RequestCaseResolution records the operator's request to re-evaluate an
// open case, under the request operation its Idempotency-Key derives.
func (s Server) RequestCaseResolution(ctx context.Context, req apigen.RequestCaseResolutionRequestObject) (apigen.RequestCaseResolutionResponseObject, error) {
	call := api.CallOf(ctx)
	if call.Assertion == "" || call.IdempotencyKey == "" {
		return nil, errors.New("casesapi: requestCaseResolution without the operator's assertion and Idempotency-Key")
	}
	if req.Body == nil {
		return nil, api.Refuse(http.StatusBadRequest, api.CodeInvalidRequest, "a request body is required")
	}
	in := cases.RequestInput{
		CaseRef:       req.CaseRef,
		OperationID:   envelope.DeriveID(DerivationRequestOperation, map[string]any{"principal": call.Caller, "idempotencyKey": call.IdempotencyKey}),
		Justification: req.Body.Justification,
	}
	for _, e := range req.Body.Evidence {
		in.Evidence = append(in.Evidence, reconciliation.EvidenceReference{EvidenceKind: e.EvidenceKind, Object: api.StrictQuad(e.Object)})
	}
	ch, err := s.Gateway.Request(ctx, call.Assertion, in)
	if errors.Is(err, cases.ErrCaseNotOpen) {
		// Operations answers "no open case" alike for a case it never had
		// and one that is resolved (or superseded): the read tells them apart.
		if _, serr := cases.Show(ctx, s.Operations, req.CaseRef); errors.Is(serr, cases.ErrCaseNotFound) {
			return nil, api.Refuse(http.StatusNotFound, api.CodeNotFound, "no case "+req.CaseRef)
		} else if serr != nil {
			return nil, serr
		}
	}
	if r := refusalOf(err); r != nil {
		return nil, r
	}
	if err != nil {
		return nil, err
	}
	body, err := chainOf(ch)
	if err != nil {
		return nil, err
	}
	return apigen.RequestCaseResolution201JSONResponse(body), nil
}

// ApproveCaseResolution records the operator's approval of another
// principal's request.
func (s Server) ApproveCaseResolution(ctx context.Context, req apigen.ApproveCaseResolutionRequestObject) (apigen.ApproveCaseResolutionResponseObject, error) {
	call := api.CallOf(ctx)
	if call.Assertion == "" {
		return nil, errors.New("casesapi: approveCaseResolution without the operator's assertion")
	}
	ch, err := s.Gateway.Approve(ctx, call.Assertion, req.RequestRef)
	if r := refusalOf(err); r != nil {
		return nil, r
	}
	if err != nil {
		return nil, err
	}
	body, err := chainOf(ch)
	if err != nil {
		return nil, err
	}
	return apigen.ApproveCaseResolution201JSONResponse(body), nil
}

// ApplyCaseResolution runs the requester's approved request to its end:
// Operations' decision, Core's grant for this assertion, Billing's
// resolution.
//
// It does not run in the API's transaction (api.TxOf), and cannot: the
// apply commits in three owners, each in its own transaction (Operations'
// decision in schema operations, Core's exchange result in schema grants,
// Billing's consumed grant and applied fact in schema billing), each as its
// own role and possibly in its own process. Core reads Operations' decision
// on another connection before it signs, so a decision left uncommitted in
// the API's transaction would not be there to read; and Billing's fact
// names the grant Core committed. So each owner commits its step on its
// own, and each step is idempotent (decision per case generation, exchange
// per assertion, resolution per decision): when the API's transaction then
// fails to store the response, a retry with the same key and assertion
// converges on the same decision, grant and applied fact. Request and
// approve go through the gateway the same way (its Operations may be
// another process), idempotent by their operation and approver.
func (s Server) ApplyCaseResolution(ctx context.Context, req apigen.ApplyCaseResolutionRequestObject) (apigen.ApplyCaseResolutionResponseObject, error) {
	call := api.CallOf(ctx)
	if call.Assertion == "" {
		return nil, errors.New("casesapi: applyCaseResolution without the operator's assertion")
	}
	applied, err := s.Gateway.Apply(ctx, call.Assertion, req.RequestRef)
	if r := refusalOf(err); r != nil {
		return nil, r
	}
	if err != nil {
		return nil, err
	}
	chain, err := chainOf(applied.Chain)
	if err != nil {
		return nil, err
	}
	if applied.Exchange == nil || applied.Result.Fact == nil || len(applied.Result.Body) == 0 {
		return nil, errors.New("casesapi: the apply returned no grant exchange result or applied fact")
	}
	exchange, err := objectOf(applied.Exchange)
	if err != nil {
		return nil, err
	}
	// Billing's applied fact as Billing stored it (its canonical body).
	fact := apigen.ContractObject{Object: api.Quad(applied.Result.Fact.Applied), Body: string(applied.Result.Body)}
	return apigen.ApplyCaseResolution201JSONResponse{Chain: chain, GrantExchange: exchange, ResolutionApplied: fact}, nil
}

// refusals are the chain's refusals of a well-formed command, each with its
// documented status and code; anything else is an error (503, nothing
// stored). The first match wins: casegateway.ErrUnauthenticated wraps
// grants.ErrAssertionExpired, and a refusal of Core or Billing comes after
// Operations' steps succeeded.
var refusals = []api.RefusalRule{
	// The assertion stopped authenticating after the middleware checked it
	// (it expired meanwhile): the operator retries with a fresh one.
	{Err: casegateway.ErrUnauthenticated, Status: http.StatusUnauthorized, Code: api.CodeUnauthorized},
	{Err: grants.ErrAssertion, Status: http.StatusUnauthorized, Code: api.CodeUnauthorized},
	{Err: grants.ErrAssertionExpired, Status: http.StatusUnauthorized, Code: api.CodeUnauthorized},

	{Err: cases.ErrRequestNotFound, Status: http.StatusNotFound, Code: api.CodeNotFound},
	{Err: cases.ErrCaseNotFound, Status: http.StatusNotFound, Code: api.CodeNotFound},
	{Err: cases.ErrCaseNotOpen, Status: http.StatusConflict, Code: api.CodeCaseNotOpen},
	{Err: reconciliation.ErrSelfApproval, Status: http.StatusConflict, Code: api.CodeApproverConflict},
	{Err: errSelfApprovalInDatabase, Status: http.StatusConflict, Code: api.CodeApproverConflict},
	{Err: cases.ErrAlreadyApproved, Status: http.StatusConflict, Code: api.CodeApproverConflict},
	{Err: cases.ErrNotApproved, Status: http.StatusConflict, Code: api.CodeNotApproved},
	{Err: cases.ErrNotRequester, Status: http.StatusConflict, Code: api.CodeNotRequester},
	{Err: cases.ErrCaseDecided, Status: http.StatusConflict, Code: api.CodeCaseDecided},
	{Err: cases.ErrRequestConflict, Status: http.StatusConflict, Code: api.CodeCommandConflict},

	{Err: grants.ErrExchangeConflict, Status: http.StatusConflict, Code: api.CodeCommandConflict},
	{Err: grants.ErrNotAuthorized, Status: http.StatusConflict, Code: api.CodeGrantRefused},
	{Err: grants.ErrDecisionNotCurrent, Status: http.StatusConflict, Code: api.CodeGrantRefused},
	{Err: reconciliation.ErrJitExpired, Status: http.StatusConflict, Code: api.CodeGrantRefused},
	{Err: reconciliation.ErrChainMismatch, Status: http.StatusConflict, Code: api.CodeGrantRefused},

	{Err: billing.ErrResolutionConflict, Status: http.StatusConflict, Code: api.CodeCommandConflict},
	{Err: billing.ErrGrantInvalid, Status: http.StatusConflict, Code: api.CodeResolutionRefused},
	{Err: billing.ErrGrantExpired, Status: http.StatusConflict, Code: api.CodeResolutionRefused},
	{Err: billing.ErrGrantReplayed, Status: http.StatusConflict, Code: api.CodeResolutionRefused},
	{Err: billing.ErrStaleCaseGeneration, Status: http.StatusConflict, Code: api.CodeResolutionRefused},

	// The request's content does not make a valid contract object (the
	// evidence is not a set of 1 to 32 references, a quadruple is not one).
	{Err: reconciliation.ErrInvalidObject, Status: http.StatusBadRequest, Code: api.CodeInvalidRequest},
}

// errSelfApprovalInDatabase stands for OP007, PostgreSQL's refusal of an
// approval by the requester (operations.resolution_command_approvals): the
// second guard behind reconciliation.ErrSelfApproval, which Operations
// checks first.
var errSelfApprovalInDatabase = errors.New("casesapi: the requester cannot approve (OP007)")

// refusalOf is the refusal of the chain err is (nil: a failure, not the
// caller's to fix), the database's OP007 included.
func refusalOf(err error) *api.Refusal {
	var pg *pgconn.PgError
	if errors.As(err, &pg) && pg.Code == cases.CodeSelfApproval {
		err = fmt.Errorf("%w: %s", errSelfApprovalInDatabase, pg.Message)
	}
	return api.RefusalOf(err, refusals)
}

// chainOf is a chain's contract objects, each with its quadruple and
// canonical body.
func chainOf(ch *cases.Chain) (apigen.CaseChain, error) {
	if ch == nil || ch.Request == nil || ch.Preview == nil {
		return apigen.CaseChain{}, errors.New("casesapi: a chain without its request and preview")
	}
	var out apigen.CaseChain
	var err error
	if out.Request, err = objectOf(ch.Request); err != nil {
		return out, err
	}
	if out.Preview, err = objectOf(ch.Preview); err != nil {
		return out, err
	}
	for _, o := range []struct {
		dst **apigen.ContractObject
		x   reconciliation.Sealed
		ok  bool
	}{{&out.Approval, ch.Approval, ch.Approval != nil}, {&out.JitActivation, ch.JIT, ch.JIT != nil},
		{&out.Candidate, ch.Candidate, ch.Candidate != nil}, {&out.Decision, ch.Decision, ch.Decision != nil}} {
		if !o.ok {
			continue
		}
		c, err := objectOf(o.x)
		if err != nil {
			return out, err
		}
		*o.dst = &c
	}
	return out, nil
}

// objectOf is a contract object's quadruple and canonical (RFC 8785) body:
// the body its strict decoder verifies the digest of.
func objectOf(x reconciliation.Sealed) (apigen.ContractObject, error) {
	body, err := jcs.Marshal(x.ToJSON())
	if err != nil {
		return apigen.ContractObject{}, fmt.Errorf("casesapi: encode %s: %w", x.Kind(), err)
	}
	return apigen.ContractObject{Object: api.Quad(*x.Quad()), Body: string(body)}, nil
}

func caseOf(v cases.CaseView) (apigen.Case, error) {
	var ids [4]uuid.UUID
	for i, s := range []string{v.FenceID, v.ReservationID, v.AccountID, v.RunID} {
		id, err := uuid.Parse(s)
		if err != nil {
			return apigen.Case{}, fmt.Errorf("casesapi: case %s: %w", v.CaseRef, err)
		}
		ids[i] = id
	}
	out := apigen.Case{
		ReconciliationCaseRef: v.CaseRef, ReconciliationGeneration: v.Generation, State: apigen.CaseState(v.State),
		BillingFinalizationFenceId: ids[0], BillingReservationId: ids[1], BillingAccountId: ids[2], RunId: ids[3],
		ReconciliationReasonCode: v.ReasonCode, FinalizationCaseIdentityReservation: api.Quad(v.Identity),
		PredecessorReconciliationCaseRef: v.PredecessorCaseRef, RequestedAt: v.RequestedAt.UTC(), ResolvedAt: utc(v.ResolvedAt),
		ResolutionOperationId: v.ResolutionOperationID, ResolvedBy: v.ResolvedBy, Requests: make([]apigen.CaseRequest, 0, len(v.Requests)),
	}
	for _, r := range v.Requests {
		out.Requests = append(out.Requests, apigen.CaseRequest{RequestRef: r.Ref, Requester: r.Requester, Justification: r.Justification,
			RequestedAt: r.RequestedAt.UTC(), Approver: r.Approver, ApprovedAt: utc(r.ApprovedAt), DecisionRef: r.DecisionRef, DecidedAt: utc(r.DecidedAt)})
	}
	return out, nil
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
