package casegateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/internal/billing/catchup"
	"github.com/oceanway/core/internal/grants"
	"github.com/oceanway/core/internal/operations/cases"
)

// LateBilling is Billing's side of the late settlement command (issue 32):
// its FundingDecision@1 for an Operations decision, and the one ledger
// transaction that applies the command (catchup.LateCommands in process).
type LateBilling interface {
	// DecideFunding returns Billing's FundingDecision@1 for the decision's
	// command operation (the stored one after a lost response), or a
	// refusal (catchup.ErrFundingRefused, ErrExposureNotOpen,
	// ErrLateCaseGeneration).
	DecideFunding(ctx context.Context, decision *reconciliation.LateDecision) (*reconciliation.FundingDecision, error)
	// ApplyLateSettlementCommand applies the command, or returns the first
	// outcome of the same command operation.
	ApplyLateSettlementCommand(ctx context.Context, cmd catchup.LateSettlementCommand) (catchup.LateSettlementOutcome, error)
}

// ErrLateNotWired: the gateway has no late settlement command owners.
var ErrLateNotWired = errors.New("casegateway: the late settlement command is not wired")

// LateOperations is Operations' side of the late settlement command chain
// (LocalOperations in process). Each command carries the operator's
// assertion: Operations authenticates the actor itself.
type LateOperations interface {
	RequestLate(ctx context.Context, assertion string, in cases.LateRequestInput) (*cases.LateChain, error)
	ApproveLate(ctx context.Context, assertion, requestRef string) (*cases.LateChain, error)
	DecideLate(ctx context.Context, assertion, requestRef string) (*cases.LateChain, error)
}

// LateGrantIssuer is Core's late settlement command grant exchange
// (grants.Exchanger in process).
type LateGrantIssuer interface {
	ExchangeLate(ctx context.Context, req grants.LateExchangeRequest) (grants.Exchanged, error)
}

var (
	_ LateOperations  = LocalOperations{}
	_ LateGrantIssuer = grants.Exchanger{}
)

// RequestLate implements LateOperations.
func (l LocalOperations) RequestLate(ctx context.Context, assertion string, in cases.LateRequestInput) (*cases.LateChain, error) {
	who, err := l.actor(assertion)
	if err != nil {
		return nil, err
	}
	return l.Commands.RequestLate(ctx, who, in)
}

// ApproveLate implements LateOperations.
func (l LocalOperations) ApproveLate(ctx context.Context, assertion, requestRef string) (*cases.LateChain, error) {
	who, err := l.actor(assertion)
	if err != nil {
		return nil, err
	}
	return l.Commands.ApproveLate(ctx, who, requestRef)
}

// DecideLate implements LateOperations.
func (l LocalOperations) DecideLate(ctx context.Context, assertion, requestRef string) (*cases.LateChain, error) {
	who, err := l.actor(assertion)
	if err != nil {
		return nil, err
	}
	return l.Commands.DecideLate(ctx, who, requestRef)
}

// lateWired: request and approve need Operations' late side only; apply
// (all) needs Core's late exchange and Billing's late command too.
func (g Gateway) lateWired(all bool) error {
	if g.LateOperations == nil || (all && (g.LateGrants == nil || g.LateBilling == nil)) {
		return ErrLateNotWired
	}
	return nil
}

// RequestLate records the operator's request to fund an exposure of an
// open late settlement case.
func (g Gateway) RequestLate(ctx context.Context, assertion string, in cases.LateRequestInput) (*cases.LateChain, error) {
	if err := g.authenticate(assertion); err != nil {
		return nil, err
	}
	if err := g.lateWired(false); err != nil {
		return nil, err
	}
	return g.LateOperations.RequestLate(ctx, assertion, in)
}

// ApproveLate records the operator's approval of another principal's late
// request.
func (g Gateway) ApproveLate(ctx context.Context, assertion, requestRef string) (*cases.LateChain, error) {
	if err := g.authenticate(assertion); err != nil {
		return nil, err
	}
	if err := g.lateWired(false); err != nil {
		return nil, err
	}
	return g.LateOperations.ApproveLate(ctx, assertion, requestRef)
}

// LateApplied is what a late apply did, from Operations' decision to
// Billing's outcome; the fields a failed step did not reach stay empty.
type LateApplied struct {
	Chain    *cases.LateChain
	Funding  *reconciliation.FundingDecision
	Grant    string
	Exchange *reconciliation.GrantExchangeResult
	Outcome  catchup.LateSettlementOutcome
}

// ApplyLate runs the requester's approved late request to its end, in
// this order: Operations' DecideLate (JIT, candidate, decision), Billing's
// FundingDecision@1 for the decision, Core's late grant for this
// assertion, and Billing's late settlement command with the grant,
// candidate, decision and funding decision. Each step is idempotent by its
// owner (the request's operation, the decision's command operation, the
// assertion's iss+jti), so ApplyLate again with the same assertion after a
// lost response returns the same decision, funding, grant and outcome.
func (g Gateway) ApplyLate(ctx context.Context, assertion, requestRef string) (LateApplied, error) {
	if err := g.authenticate(assertion); err != nil {
		return LateApplied{}, err
	}
	if err := g.lateWired(true); err != nil {
		return LateApplied{}, err
	}
	ch, err := g.LateOperations.DecideLate(ctx, assertion, requestRef)
	if err != nil {
		return LateApplied{}, err
	}
	out := LateApplied{Chain: ch}
	if out.Funding, err = g.LateBilling.DecideFunding(ctx, ch.Decision); err != nil {
		return out, fmt.Errorf("funding decision: %w", err)
	}
	ex, err := g.LateGrants.ExchangeLate(ctx, grants.LateExchangeRequest{Assertion: assertion, Workload: Workload, Request: ch.Request,
		Preview: ch.Preview, Approval: ch.Approval, JIT: ch.JIT, Candidate: ch.Candidate, Decision: ch.Decision})
	if err != nil {
		return out, err
	}
	out.Grant, out.Exchange = ex.Grant, ex.Result
	out.Outcome, err = g.LateBilling.ApplyLateSettlementCommand(ctx, catchup.LateSettlementCommand{Grant: ex.Grant,
		Candidate: ch.Candidate, Decision: ch.Decision, Funding: out.Funding, Now: g.now()})
	if err != nil {
		return out, err
	}
	return out, nil
}
