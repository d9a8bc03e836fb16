// Package casegateway is the admin command gateway of the Finalization
// reconciliation cases (issue 31, ADR-031): the one workload that turns an
// authenticated operator's commands into the fixed chain — Operations'
// request, approval and decision, Core's grant exchange, Billing's
// resolution — and the reads an operator lists and inspects cases with.
//
// Every command is authenticated by the operator's actor assertion (a
// short-lived JWT of a trusted workforce identity provider); the principal
// is its subject, never a flag. The gateway holds no state of its own: each
// owner keeps its part of the chain, idempotent, so a command retried after
// a lost response converges on the first result.
package casegateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/grants"
	"github.com/oceanway/core/internal/operations/cases"
)

// Workload is the gateway's workload principal: every candidate binds it,
// and Core's exchange accepts only it as the caller.
const Workload = "admin.command-gateway"

// ErrUnauthenticated: the actor assertion does not verify or is not valid now.
var ErrUnauthenticated = errors.New("casegateway: the actor assertion does not authenticate")

// Operations is Operations' side of the chain (LocalOperations in
// process, casehttp's client over HTTP). Each command carries the
// operator's assertion: Operations authenticates the actor itself.
type Operations interface {
	Request(ctx context.Context, assertion string, in cases.RequestInput) (*cases.Chain, error)
	Approve(ctx context.Context, assertion, requestRef string) (*cases.Chain, error)
	Decide(ctx context.Context, assertion, requestRef string) (*cases.Chain, error)
}

// LocalOperations is Operations in process: it authenticates the
// assertion and runs the command as its subject.
type LocalOperations struct {
	Actors   *grants.AssertionVerifier
	Commands cases.Commands
	Now      func() time.Time
}

func (l LocalOperations) actor(assertion string) (string, error) {
	return Authenticate(l.Actors, assertion, l.Now)
}

// Request implements Operations.
func (l LocalOperations) Request(ctx context.Context, assertion string, in cases.RequestInput) (*cases.Chain, error) {
	who, err := l.actor(assertion)
	if err != nil {
		return nil, err
	}
	return l.Commands.Request(ctx, who, in)
}

// Approve implements Operations.
func (l LocalOperations) Approve(ctx context.Context, assertion, requestRef string) (*cases.Chain, error) {
	who, err := l.actor(assertion)
	if err != nil {
		return nil, err
	}
	return l.Commands.Approve(ctx, who, requestRef)
}

// Decide implements Operations.
func (l LocalOperations) Decide(ctx context.Context, assertion, requestRef string) (*cases.Chain, error) {
	who, err := l.actor(assertion)
	if err != nil {
		return nil, err
	}
	return l.Commands.Decide(ctx, who, requestRef)
}

// Authenticate verifies an actor assertion and that it is valid now, and
// returns its principal.
func Authenticate(v *grants.AssertionVerifier, assertion string, now func() time.Time) (string, error) {
	a, err := v.Verify(assertion)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	t := time.Now()
	if now != nil {
		t = now()
	}
	if !a.ValidAt(t) {
		return "", fmt.Errorf("%w: %w", ErrUnauthenticated, grants.ErrAssertionExpired)
	}
	return a.Subject, nil
}

// GrantIssuer is Core's grant exchange (grants.Exchanger in process).
type GrantIssuer interface {
	Exchange(ctx context.Context, req grants.ExchangeRequest) (grants.Exchanged, error)
}

// Resolutions is Billing's resolution command (BillingResolutions in process).
type Resolutions interface {
	ApplyResolution(ctx context.Context, cmd billing.ResolutionCommand) (billing.ResolutionResult, error)
}

// BillingResolutions applies resolutions on the core database as
// oceanway_billing, trusting Core's grant key.
type BillingResolutions struct {
	Pool   db.Beginner
	Grants billing.GrantVerifier
}

// ApplyResolution runs billing.ApplyResolutionTx in its own transaction.
func (b BillingResolutions) ApplyResolution(ctx context.Context, cmd billing.ResolutionCommand) (billing.ResolutionResult, error) {
	return db.WithTxV(ctx, b.Pool, func(ctx context.Context, tx pgx.Tx) (billing.ResolutionResult, error) {
		return billing.ApplyResolutionTx(ctx, tx, b.Grants, cmd)
	})
}

// Gateway runs the case commands against the owners (in process, or over
// HTTP when they run apart).
type Gateway struct {
	// Actors verifies operators' assertions.
	Actors     *grants.AssertionVerifier
	Operations Operations
	Grants     GrantIssuer
	Billing    Resolutions
	// LateOperations, LateGrants and LateBilling run the late settlement
	// command (issue 32; late.go): RequestLate and ApproveLate need
	// LateOperations, ApplyLate all three (else ErrLateNotWired).
	LateOperations LateOperations
	LateGrants     LateGrantIssuer
	LateBilling    LateBilling
	Now            func() time.Time
}

// authenticate refuses an assertion that does not verify before any owner
// is called.
func (g Gateway) authenticate(assertion string) error {
	_, err := Authenticate(g.Actors, assertion, g.Now)
	return err
}

// Request records the operator's request to re-evaluate an open case.
func (g Gateway) Request(ctx context.Context, assertion string, in cases.RequestInput) (*cases.Chain, error) {
	if err := g.authenticate(assertion); err != nil {
		return nil, err
	}
	return g.Operations.Request(ctx, assertion, in)
}

// Approve records the operator's approval of another principal's request.
func (g Gateway) Approve(ctx context.Context, assertion, requestRef string) (*cases.Chain, error) {
	if err := g.authenticate(assertion); err != nil {
		return nil, err
	}
	return g.Operations.Approve(ctx, assertion, requestRef)
}

// Applied is what an apply did, from the decision to Billing's fact.
type Applied struct {
	Chain    *cases.Chain
	Grant    string
	Exchange *reconciliation.GrantExchangeResult
	Result   billing.ResolutionResult
}

// Apply runs the requester's approved request to its end: Operations'
// decision (with the JIT activation and the candidate), Core's grant for
// this assertion, and Billing's resolution. Each step is idempotent, so
// Apply again with the same assertion after a lost response returns the
// same decision, grant and applied fact.
func (g Gateway) Apply(ctx context.Context, assertion, requestRef string) (Applied, error) {
	if err := g.authenticate(assertion); err != nil {
		return Applied{}, err
	}
	ch, err := g.Operations.Decide(ctx, assertion, requestRef)
	if err != nil {
		return Applied{}, err
	}
	ex, err := g.Grants.Exchange(ctx, grants.ExchangeRequest{Assertion: assertion, Workload: Workload, Request: ch.Request,
		Preview: ch.Preview, Approval: ch.Approval, JIT: ch.JIT, Candidate: ch.Candidate, Decision: ch.Decision})
	if err != nil {
		return Applied{Chain: ch}, err
	}
	res, err := g.Billing.ApplyResolution(ctx, billing.ResolutionCommand{Grant: ex.Grant, Candidate: ch.Candidate, Decision: ch.Decision, Now: g.now()})
	if err != nil {
		return Applied{Chain: ch, Grant: ex.Grant, Exchange: ex.Result}, err
	}
	return Applied{Chain: ch, Grant: ex.Grant, Exchange: ex.Result, Result: res}, nil
}

func (g Gateway) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}
