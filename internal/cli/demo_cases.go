package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oceanway/core/internal/billing/catchup"
	"github.com/oceanway/core/internal/billing/catchup/catchupmetering"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/casegateway"
	"github.com/oceanway/core/internal/demo"
	"github.com/oceanway/core/internal/grants"
	"github.com/oceanway/core/internal/metering"
	"github.com/oceanway/core/internal/operations/cases"
	operationsschema "github.com/oceanway/core/internal/operations/schema"
	"github.com/oceanway/core/internal/workload"
)

// The demo's workforce: its identity provider and the two operators who
// close the Finalization reconciliation cases (one requests and applies,
// the other approves), and the issuer of Core's command grants.
const (
	demoIdentityProvider = "https://idp.demo.oceanway.invalid"
	demoRequester        = "workforce:alice@demo.oceanway.invalid"
	demoApprover         = "workforce:bob@demo.oceanway.invalid"
	demoGrantIssuer      = "core.grants"
	// demoAssertionLifetime is each command's actor assertion lifetime.
	demoAssertionLifetime = 2 * time.Minute
)

// caseDesk is the demo's Finalization reconciliation case desk on the core
// database (issue 31 item 8): Operations' case identities (which the
// finalization worker reserves before it enters a case) and its command
// chain as oceanway_operations, Core's grant exchange as oceanway_grants
// and Billing's resolution as oceanway_billing, each on its own small pool;
// a workforce identity provider and Core's grant key generated for the run.
type caseDesk struct {
	operations, grants, billing *pgxpool.Pool
	cases                       *demo.Cases
}

// newCaseDesk builds the desk over core's database (the connecting user
// must be a member of the three roles, as for serve).
//
// meteringDB is the Metering database: the late settlement command takes
// Metering's current late_settlement_command receipt there (issue 32).
func newCaseDesk(core, meteringDB *pgxpool.Pool) (_ *caseDesk, err error) {
	d := &caseDesk{}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	for _, p := range []struct {
		pool **pgxpool.Pool
		role string
	}{{&d.operations, operationsschema.RoleOperations}, {&d.grants, billingschema.RoleGrants}, {&d.billing, billingschema.RoleBilling}} {
		if *p.pool, err = rolePoolOf(core, p.role, 3); err != nil {
			return nil, err
		}
	}
	idpKey, idpPub, err := workload.Generate()
	if err != nil {
		return nil, err
	}
	idp, err := grants.NewAssertionSigner(demoIdentityProvider, idpKey, nil)
	if err != nil {
		return nil, err
	}
	actors, err := grants.NewAssertionVerifier(grants.ActorIssuer{Issuer: demoIdentityProvider, Key: idpPub})
	if err != nil {
		return nil, err
	}
	grantKey, grantPub, err := workload.Generate()
	if err != nil {
		return nil, err
	}
	signer, err := grants.NewSigner(demoGrantIssuer, grantKey)
	if err != nil {
		return nil, err
	}
	verifier, err := grants.NewVerifier(demoGrantIssuer, grantPub)
	if err != nil {
		return nil, err
	}
	lateGrants, err := catchup.NewLateGrantVerifier(demoGrantIssuer, grantPub)
	if err != nil {
		return nil, err
	}
	ops := cases.Commands{Pool: d.operations, Workload: casegateway.Workload}
	local := casegateway.LocalOperations{Actors: actors, Commands: ops}
	exchange := grants.Exchanger{Pool: d.grants, Signer: signer, Assertions: actors, Decisions: ops, LateDecisions: ops}
	d.cases = &demo.Cases{
		Gateway: casegateway.Gateway{Actors: actors, Operations: local, Grants: exchange,
			Billing:        casegateway.BillingResolutions{Pool: d.billing, Grants: verifier},
			LateOperations: local, LateGrants: exchange,
			LateBilling: &catchup.LateCommands{Pool: d.billing, Grants: lateGrants,
				Metering: catchupmetering.Reads{Metering: metering.Reads{DB: meteringDB}}}},
		Assert:    func(principal string) (string, error) { return idp.Assert(principal, demoAssertionLifetime) },
		Requester: demoRequester, Approver: demoApprover,
	}
	return d, nil
}

// rolePoolOf opens a pool on core's database whose sessions run as role
// (SET ROLE after connecting), with at most maxConns connections. It
// connects on first use.
func rolePoolOf(core *pgxpool.Pool, role string, maxConns int32) (*pgxpool.Pool, error) {
	cfg := core.Config().Copy()
	cfg.MaxConns, cfg.MinConns = maxConns, 0
	setRole := "SET ROLE " + pgx.Identifier{role}.Sanitize()
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, setRole)
		return err
	}
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("demo cases: pool as %s: %w", role, err)
	}
	return p, nil
}

// Close closes the desk's pools.
func (d *caseDesk) Close() {
	for _, p := range []*pgxpool.Pool{d.operations, d.grants, d.billing} {
		if p != nil {
			p.Close()
		}
	}
}
