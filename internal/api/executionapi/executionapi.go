// Package executionapi answers the Execution owner's operations of the
// platform API (openRun, createAttempt, finalizeAttemptEligibility,
// closeRun, getAttemptEligibility, getRunClosure) with the Execution
// owner's own code over the execution database. It is the one place the
// API meets Execution.
//
// A mutating operation runs the owner's service over the API's transaction
// (api.TxOf): the service's own transactions become savepoints, so the
// owner's facts, their events and the stored response commit together, and
// a refusal commits nothing. Core's manifest read and the Gateway's slot
// read are the owner reads the wiring passes in; nothing here imports
// another owner.
package executionapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/internal/api"
	"github.com/oceanway/core/internal/api/apigen"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/execution"
	"github.com/oceanway/core/internal/ownerread/coreread"
	"github.com/oceanway/core/internal/ownerread/ownerhttp"
	"github.com/oceanway/core/internal/runtoken"
)

// Server is Execution's part of the API (api.ExecutionOperations).
type Server struct {
	// Pool is the execution database as oceanway_execution (the reads); a
	// mutating call runs in the API's transaction instead.
	Pool *pgxpool.Pool
	// Core is Core's readRunAdmissionManifest (in process or over HTTP).
	Core execution.ManifestReads
	// Gateway is the Gateway's readDispatchSlot (the proof of a
	// not_dispatched attempt).
	Gateway execution.GatewayReads
	// Tokens verifies run execution tokens against Core's token key.
	Tokens *runtoken.Verifier
}

var _ api.ExecutionOperations = Server{}

// service is the Execution owner over the operation's transaction.
func (s Server) service(ctx context.Context, op string) (*execution.Service, error) {
	tx, ok := api.TxOf(ctx)
	if !ok {
		return nil, fmt.Errorf("executionapi: %s outside its idempotent transaction", op)
	}
	svc := execution.New(tx, manifestReads{s.Core})
	if s.Gateway != nil {
		// Any failed slot read is the service's ErrGatewayReadUnavailable.
		svc.SetGatewayReads(s.Gateway)
	}
	return svc, nil
}

// OpenRun opens a run's execution state with Core's signed token: the JWS
// must verify under Core's token key before its payload is even decoded.
func (s Server) OpenRun(ctx context.Context, req apigen.OpenRunRequestObject) (apigen.OpenRunResponseObject, error) {
	if s.Tokens == nil || s.Core == nil {
		return nil, errors.New("executionapi: openRun needs Core's token key and manifest read")
	}
	svc, err := s.service(ctx, "openRun")
	if err != nil {
		return nil, err
	}
	payload, err := s.Tokens.Verify(req.Body.Token)
	if err != nil {
		return nil, api.Refuse(http.StatusBadRequest, api.CodeTokenInvalid, err.Error())
	}
	st, err := svc.OpenRun(ctx, payload)
	if r := api.RefusalOf(err, refusals); r != nil {
		return nil, r
	}
	if err != nil {
		return nil, err
	}
	return apigen.OpenRun201JSONResponse{
		RunId: uuid.MustParse(st.RunID), BillingAccountId: uuid.MustParse(st.BillingAccountID),
		BillingReservationId: uuid.MustParse(st.BillingReservationID), Manifest: api.Quad(st.Manifest),
		RunExecutionToken: api.Quad(st.Token), State: apigen.RunExecutionStateState(st.State), StateVersion: st.StateVersion,
	}, nil
}

// CreateAttempt creates an attempt of a run step on one route (the same
// attempt on the same route again answers the attempt as first created).
func (s Server) CreateAttempt(ctx context.Context, req apigen.CreateAttemptRequestObject) (apigen.CreateAttemptResponseObject, error) {
	svc, err := s.service(ctx, "createAttempt")
	if err != nil {
		return nil, err
	}
	b := req.Body
	a, err := svc.CreateAttempt(ctx, execution.AttemptRequest{
		RunID: req.RunId.String(), RunStepID: b.RunStepId.String(), ExecutionAttemptID: b.ExecutionAttemptId.String(),
		ModelDeploymentID: b.ModelDeploymentId, GatewayDeploymentID: b.GatewayDeploymentId,
		RoutingPolicyRevision: b.RoutingPolicyRevision, OutputContract: api.StrictQuad(b.OutputContract),
	})
	if r := api.RefusalOf(err, refusals); r != nil {
		return nil, r
	}
	if err != nil {
		return nil, err
	}
	m := a.Manifest
	return apigen.CreateAttempt201JSONResponse{
		RunId: uuid.MustParse(m.RunID), RunStepId: uuid.MustParse(m.RunStepID), ExecutionAttemptId: uuid.MustParse(m.ExecutionAttemptID),
		GatewayDeploymentId: m.GatewayDeploymentID, Manifest: api.Quad(m.Manifest), ManifestBody: string(a.Body),
	}, nil
}

// FinalizeAttemptEligibility appends the attempt's one eligibility fact
// (the same disposition again answers the fact as first finalized).
func (s Server) FinalizeAttemptEligibility(ctx context.Context, req apigen.FinalizeAttemptEligibilityRequestObject) (apigen.FinalizeAttemptEligibilityResponseObject, error) {
	svc, err := s.service(ctx, "finalizeAttemptEligibility")
	if err != nil {
		return nil, err
	}
	tx, _ := api.TxOf(ctx)
	id := req.AttemptId.String()
	if _, _, err := execution.AttemptByID(ctx, tx, id); errors.Is(err, db.ErrNotFound) {
		return apigen.FinalizeAttemptEligibility404ApplicationProblemPlusJSONResponse(api.NewProblem(http.StatusNotFound, api.CodeNotFound, "no attempt "+id)), nil
	} else if err != nil {
		return nil, err
	}
	el, err := svc.FinalizeEligibility(ctx, id, string(req.Body.Disposition))
	if r := api.RefusalOf(err, refusals); r != nil {
		return nil, r
	}
	if err != nil {
		return nil, err
	}
	return apigen.FinalizeAttemptEligibility201JSONResponse(eligibilityOf(el)), nil
}

// GetAttemptEligibility reads an attempt's eligibility fact.
func (s Server) GetAttemptEligibility(ctx context.Context, req apigen.GetAttemptEligibilityRequestObject) (apigen.GetAttemptEligibilityResponseObject, error) {
	id := req.AttemptId.String()
	el, err := execution.EligibilityByAttempt(ctx, s.Pool, id)
	if errors.Is(err, db.ErrNotFound) {
		return apigen.GetAttemptEligibility404ApplicationProblemPlusJSONResponse(api.NewProblem(http.StatusNotFound, api.CodeNotFound, "attempt "+id+" has no eligibility")), nil
	}
	if err != nil {
		return nil, err
	}
	return apigen.GetAttemptEligibility200JSONResponse(eligibilityOf(el)), nil
}

// CloseRun closes the run's attempt set (EX-2). A second closure is
// refused (409 run_closed); a replay of the first call's key answers the
// first closure.
func (s Server) CloseRun(ctx context.Context, req apigen.CloseRunRequestObject) (apigen.CloseRunResponseObject, error) {
	svc, err := s.service(ctx, "closeRun")
	if err != nil {
		return nil, err
	}
	c, err := svc.CloseRun(ctx, req.RunId.String())
	if r := api.RefusalOf(err, refusals); r != nil {
		return nil, r
	}
	if err != nil {
		return nil, err
	}
	return apigen.CloseRun201JSONResponse(closureOf(c)), nil
}

// GetRunClosure reads a run's closure.
func (s Server) GetRunClosure(ctx context.Context, req apigen.GetRunClosureRequestObject) (apigen.GetRunClosureResponseObject, error) {
	id := req.RunId.String()
	c, err := execution.ClosureByRun(ctx, s.Pool, id)
	if errors.Is(err, db.ErrNotFound) {
		return apigen.GetRunClosure404ApplicationProblemPlusJSONResponse(api.NewProblem(http.StatusNotFound, api.CodeNotFound, "run "+id+" has no closure")), nil
	}
	if err != nil {
		return nil, err
	}
	return apigen.GetRunClosure200JSONResponse(closureOf(c)), nil
}

func eligibilityOf(el execution.Eligibility) apigen.Eligibility {
	f := el.Fact
	out := apigen.Eligibility{ExecutionAttemptId: uuid.MustParse(f.ExecutionAttemptID), Disposition: apigen.EligibilityDisposition(f.Disposition),
		Fact: api.Quad(f.Fact), FactBody: string(el.Body)}
	if f.Disposition == contract.DispositionNotDispatched {
		q := api.Quad(f.NotDispatched)
		out.AttemptNotDispatchedFact = &q
	}
	return out
}

func closureOf(c execution.Closure) apigen.RunClosure {
	return apigen.RunClosure{RunId: uuid.MustParse(c.Fact.RunID), AttemptSet: api.Quad(c.AttemptSet.Manifest), AttemptSetBody: string(c.AttemptSetBody),
		FinalizationFact: api.Quad(c.Fact.Fact), FinalizationFactBody: string(c.FactBody)}
}

// errOwnerUnavailable marks an owner read (Core's manifest, the Gateway's
// slot) that did not answer: the caller retries with the same key.
var errOwnerUnavailable = errors.New("executionapi: owner read unavailable")

// manifestReads is Core's manifest read with its unavailability marked, so
// it is told apart from a failure of the execution database.
type manifestReads struct{ execution.ManifestReads }

func (r manifestReads) ReadRunAdmissionManifest(ctx context.Context, req coreread.RunAdmissionManifestRead) (coreread.ManifestResult, error) {
	res, err := r.ManifestReads.ReadRunAdmissionManifest(ctx, req)
	return res, markUnavailable(err)
}

// markUnavailable marks an owner read that did not answer: over HTTP
// (ownerhttp.ErrUnavailable) or in process (a connection-level failure of
// the owner's database). A failed slot read needs no mark: the service
// reports it as ErrGatewayReadUnavailable.
func markUnavailable(err error) error {
	if err != nil && (errors.Is(err, ownerhttp.ErrUnavailable) || db.Transient(err)) {
		return fmt.Errorf("%w: %w", errOwnerUnavailable, err)
	}
	return err
}

// refusals are the owner's refusals of a well-formed request, each with its
// documented status and code; anything else is an error (503, nothing
// committed). The first match wins.
var refusals = []api.RefusalRule{
	{Err: errOwnerUnavailable, Status: http.StatusServiceUnavailable, Code: api.CodeOwnerUnavailable},
	{Err: execution.ErrGatewayReadUnavailable, Status: http.StatusServiceUnavailable, Code: api.CodeOwnerUnavailable},
	{Err: execution.ErrInvalidToken, Status: http.StatusBadRequest, Code: api.CodeTokenInvalid},
	{Err: execution.ErrManifestNotReadable, Status: http.StatusNotFound, Code: api.CodeNotFound},
	{Err: execution.ErrManifestConflict, Status: http.StatusConflict, Code: api.CodeManifestConflict},
	{Err: execution.ErrTokenConflict, Status: http.StatusConflict, Code: api.CodeTokenConflict},
	{Err: execution.ErrRunNotFound, Status: http.StatusNotFound, Code: api.CodeNotFound},
	{Err: execution.ErrRunClosed, Status: http.StatusConflict, Code: api.CodeRunClosed},
	{Err: execution.ErrAlreadyClosed, Status: http.StatusConflict, Code: api.CodeRunClosed},
	{Err: execution.ErrInvalidAttempt, Status: http.StatusBadRequest, Code: api.CodeInvalidRequest},
	{Err: execution.ErrAttemptConflict, Status: http.StatusConflict, Code: api.CodeAttemptConflict},
	{Err: execution.ErrEligibilityMissing, Status: http.StatusConflict, Code: api.CodeEligibilityMissing},
	{Err: execution.ErrInvalidEligibility, Status: http.StatusBadRequest, Code: api.CodeInvalidRequest},
	{Err: execution.ErrEligibilityExists, Status: http.StatusConflict, Code: api.CodeEligibilityConflict},
	{Err: execution.ErrNotProvenRejected, Status: http.StatusConflict, Code: api.CodeNotProvenRejected},
}
