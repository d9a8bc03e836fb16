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

// Gateway runs the case commands against the owners in process.
type Gateway struct {
	// Actors verifies operators' assertions.
	Actors *grants.AssertionVerifier
	// Operations is Operations' command chain (its pool: oceanway_operations).
	Operations cases.Commands
	// Grants is Core's grant exchange.
	Grants grants.Exchanger
	// Billing is the core database as oceanway_billing and the grant
	// verifier Billing trusts.
	Billing      db.Beginner
	BillingGrant billing.GrantVerifier
	Now          func() time.Time
}

// actor authenticates an assertion and returns its principal.
func (g Gateway) actor(assertion string) (string, error) {
	a, err := g.Actors.Verify(assertion)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	if !a.ValidAt(g.now()) {
		return "", fmt.Errorf("%w: %w", ErrUnauthenticated, grants.ErrAssertionExpired)
	}
	return a.Subject, nil
}

// Request records the operator's request to re-evaluate an open case.
func (g Gateway) Request(ctx context.Context, assertion string, in cases.RequestInput) (*cases.Chain, error) {
	who, err := g.actor(assertion)
	if err != nil {
		return nil, err
	}
	return g.Operations.Request(ctx, who, in)
}

// Approve records the operator's approval of another principal's request.
func (g Gateway) Approve(ctx context.Context, assertion, requestRef string) (*cases.Chain, error) {
	who, err := g.actor(assertion)
	if err != nil {
		return nil, err
	}
	return g.Operations.Approve(ctx, who, requestRef)
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
	who, err := g.actor(assertion)
	if err != nil {
		return Applied{}, err
	}
	ch, err := g.Operations.Decide(ctx, who, requestRef)
	if err != nil {
		return Applied{}, err
	}
	ex, err := g.Grants.Exchange(ctx, grants.ExchangeRequest{Assertion: assertion, Workload: Workload, Request: ch.Request,
		Preview: ch.Preview, Approval: ch.Approval, JIT: ch.JIT, Candidate: ch.Candidate, Decision: ch.Decision})
	if err != nil {
		return Applied{Chain: ch}, err
	}
	res, err := db.WithTxV(ctx, g.Billing, func(ctx context.Context, tx pgx.Tx) (billing.ResolutionResult, error) {
		return billing.ApplyResolutionTx(ctx, tx, g.BillingGrant, billing.ResolutionCommand{Grant: ex.Grant,
			Candidate: ch.Candidate, Decision: ch.Decision, Now: g.now()})
	})
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
