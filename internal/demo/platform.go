package demo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/admission"
	"github.com/oceanway/core/internal/execution"
	"github.com/oceanway/core/internal/gateway"
)

// Platform is how the scenario calls the owners, as a platform would: in
// process through their Go services (the default), or over the platform
// API with its generated client (demo --via api). Every call is
// idempotent on replay (the scenario replays after ErrRetry or a
// transient database error): admission by operation id, a run's one token,
// attempts by id and route, a slot's stored reply, an eligibility by
// attempt, a closure by run, an observation by its key.
type Platform interface {
	// Admit admits a run (run, manifest, reservation, fence).
	Admit(ctx context.Context, req admission.Request) (Admitted, error)
	// OpenRun has Core issue the run's execution token and opens the run's
	// execution state with it.
	OpenRun(ctx context.Context, runID string) error
	CreateAttempt(ctx context.Context, req execution.AttemptRequest) (Attempt, error)
	Dispatch(ctx context.Context, req gateway.DispatchRequest) (gateway.Reply, error)
	FinalizeEligibility(ctx context.Context, attemptID, disposition string) error
	// CloseRun closes the run's attempt set; a replay after a lost answer
	// succeeds.
	CloseRun(ctx context.Context, runID string) error
	// Observe reports one observation (key: the caller's for this one
	// report, the same on replay) and returns the availability snapshot it
	// left current.
	Observe(ctx context.Context, key, attemptID string, o gateway.Observation) (strict.Quadruple, error)
	// ReservationState is the reservation's state (reserved, settled,
	// released).
	ReservationState(ctx context.Context, reservationID string) (string, error)
}

// Admitted is what the scenario keeps of an admission.
type Admitted struct {
	RunID, BillingReservationID string
}

// Attempt is a created attempt: its manifest and canonical bytes.
type Attempt struct {
	Manifest *contract.AttemptExecutionManifest
	Body     []byte
}

// How the scenario called the owners (Summary.Driver).
const (
	DriverInProcess = "in process (the owners' Go services)"
	DriverAPI       = "platform API over HTTP (the generated client, one token and Idempotency-Key per call)"
)

// ErrRetry is an answer the scenario replays: the owner did not commit
// (unavailable, the same key still in progress, the connection lost).
var ErrRetry = errors.New("demo: retry the call")

// InProcess calls the owners' Go services directly.
type InProcess struct {
	Core      *pgxpool.Pool
	Admission *admission.Service
	Execution *execution.Service
	Gateway   *gateway.Service
	// closing holds the runs whose closure was tried (a replay's
	// ErrAlreadyClosed means that try committed).
	closing sync.Map
}

var _ Platform = (*InProcess)(nil)

func (p *InProcess) Admit(ctx context.Context, req admission.Request) (Admitted, error) {
	res, err := p.Admission.Admit(ctx, req)
	return Admitted{RunID: res.RunID, BillingReservationID: res.BillingReservationID}, err
}

func (p *InProcess) OpenRun(ctx context.Context, runID string) error {
	run, err := admission.Lookup(ctx, p.Core, runID)
	if err != nil {
		return err
	}
	// The run's one token: issued at its admission under the run's ref,
	// as the API issues it.
	_, body, err := admission.IssueRunExecutionToken(ctx, p.Core, runID, "ret-"+runID, run.AdmittedAt)
	if err != nil {
		return err
	}
	_, err = p.Execution.OpenRun(ctx, body)
	return err
}

func (p *InProcess) CreateAttempt(ctx context.Context, req execution.AttemptRequest) (Attempt, error) {
	a, err := p.Execution.CreateAttempt(ctx, req)
	return Attempt{Manifest: a.Manifest, Body: a.Body}, err
}

func (p *InProcess) Dispatch(ctx context.Context, req gateway.DispatchRequest) (gateway.Reply, error) {
	return p.Gateway.Dispatch(ctx, req)
}

func (p *InProcess) FinalizeEligibility(ctx context.Context, attemptID, disposition string) error {
	_, err := p.Execution.FinalizeEligibility(ctx, attemptID, disposition)
	return err
}

func (p *InProcess) CloseRun(ctx context.Context, runID string) error {
	_, replay := p.closing.LoadOrStore(runID, true)
	_, err := p.Execution.CloseRun(ctx, runID)
	if replay && errors.Is(err, execution.ErrAlreadyClosed) {
		// Closure is the one call whose replay is refused: on a replay it
		// means this scenario's earlier try committed.
		return nil
	}
	return err
}

func (p *InProcess) Observe(ctx context.Context, _ string, attemptID string, o gateway.Observation) (strict.Quadruple, error) {
	for {
		adv, err := p.Gateway.Observe(ctx, attemptID, o)
		if errors.Is(err, gateway.ErrChainMoved) {
			continue // another report advanced the chain first: report on its successor
		}
		if err != nil {
			return strict.Quadruple{}, err
		}
		return adv.Snapshot.Snapshot, nil
	}
}

func (p *InProcess) ReservationState(ctx context.Context, reservationID string) (string, error) {
	var st string
	err := p.Core.QueryRow(ctx, qReservationState, reservationID).Scan(&st)
	if err != nil {
		return "", fmt.Errorf("reservation %s state: %w", reservationID, err)
	}
	return st, nil
}

// retryPause is the first pause before a replay; it doubles up to 2 s.
const retryPause = 50 * time.Millisecond
