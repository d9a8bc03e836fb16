package grants_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/contracts/strict"
	admissionschema "github.com/oceanway/core/internal/admission/schema"
	"github.com/oceanway/core/internal/billing/billingtest"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/grants"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/operationsread"
	"github.com/oceanway/core/internal/workload"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

const (
	idp     = "https://idp.example.org"
	alice   = "workforce:alice@example.org"
	bob     = "workforce:bob@example.org"
	gateway = "admin.command-gateway"
)

// decisions is Operations' answer at the issuing boundary.
type decisions struct {
	mu     sync.Mutex
	answer ownerread.Answer
}

func (d *decisions) ReadFinalizationResolutionDecision(context.Context, operationsread.ResolutionDecisionRead) (ownerread.Answer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.answer, nil
}

type fixture struct {
	admin     *pgxpool.Pool
	grantsDB  *pgxpool.Pool // oceanway_grants
	billingDB *pgxpool.Pool // oceanway_billing
	x         grants.Exchanger
	ops       *decisions
	idp       *grants.AssertionSigner
	verifier  *grants.Verifier
	now       time.Time
}

func setup(t *testing.T) *fixture {
	t.Helper()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core},
		Lines: []migrate.Line{outboxschema.Line(), admissionschema.Line(), billingschema.Line()}, MaxConns: 12})
	f := &fixture{admin: b.Core(), now: time.Now(), ops: &decisions{answer: ownerread.Found}}
	f.grantsDB = dbtest.RolePool(t, b.DSNs[boundary.Core], billingschema.RoleGrants)
	f.billingDB = dbtest.RolePool(t, b.DSNs[boundary.Core], billingschema.RoleBilling)
	corePriv, corePub, err := workload.Generate()
	require.NoError(t, err)
	signer, err := grants.NewSigner("core.grants", corePriv)
	require.NoError(t, err)
	f.verifier, err = grants.NewVerifier("core.grants", corePub)
	require.NoError(t, err)
	idpPriv, idpPub, err := workload.Generate()
	require.NoError(t, err)
	f.idp, err = grants.NewAssertionSigner(idp, idpPriv, func() time.Time { return f.now })
	require.NoError(t, err)
	av, err := grants.NewAssertionVerifier(grants.ActorIssuer{Issuer: idp, Key: idpPub})
	require.NoError(t, err)
	f.x = grants.Exchanger{Pool: f.grantsDB, Signer: signer, Assertions: av, Decisions: f.ops, Now: func() time.Time { return f.now }}
	return f
}

func testCase() reconciliation.Case {
	return reconciliation.Case{ReconciliationCaseRef: "fcase-1", ReconciliationGeneration: 1,
		Identity:         strict.Quadruple{Ref: "fcir-1", SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: strings.Repeat("ab", 32)},
		BillingAccountID: uuid.NewString(), BillingReservationID: uuid.NewString(), RunID: uuid.NewString(), FenceID: uuid.NewString()}
}

func (f *fixture) request(t *testing.T, actor string) grants.ExchangeRequest {
	t.Helper()
	ch, err := billingtest.BuildChain(testCase(), alice, bob, gateway, f.now)
	require.NoError(t, err)
	a, err := f.idp.Assert(actor, time.Minute)
	require.NoError(t, err)
	return grants.ExchangeRequest{Assertion: a, Workload: gateway, Request: ch.Request, Preview: ch.Preview, Approval: ch.Approval,
		JIT: ch.JIT, Candidate: ch.Candidate, Decision: ch.Decision}
}

// OP-1 (issue 31): Core exchanges the operator's assertion for a signed,
// single-use grant that binds the whole chain. The grant verifies with
// Core's key and names the candidate's actor, workload, quadruples and
// resolution operation. After a lost response the same assertion and
// command get the first grant back, even once the assertion has expired;
// the same assertion for another command is refused.
func TestOP1GrantExchangeIsOperationFirst(t *testing.T) {
	t.Parallel()
	f := setup(t)
	req := f.request(t, alice)
	first, err := f.x.Exchange(t.Context(), req)
	require.NoError(t, err)
	require.False(t, first.Replayed)
	claims, err := f.verifier.VerifyGrant(first.Grant)
	require.NoError(t, err)
	require.NoError(t, reconciliation.CheckGrant(claims, req.Candidate, req.Decision))
	require.NoError(t, reconciliation.CheckExchange(first.Result, claims, reconciliation.GrantSHA256(first.Grant)))

	f.now = f.now.Add(time.Hour) // the assertion expired meanwhile
	again, err := f.x.Exchange(t.Context(), req)
	require.NoError(t, err)
	require.True(t, again.Replayed)
	require.Equal(t, first.Grant, again.Grant)

	other := f.request(t, alice)
	other.Assertion = req.Assertion
	_, err = f.x.Exchange(t.Context(), other)
	require.ErrorIs(t, err, grants.ErrExchangeConflict)
}

// OP-1 (issue 31): the exchange refuses, writing nothing: an expired
// assertion, an assertion of an untrusted issuer, an actor who is not the
// candidate's, a caller that is not the bound workload, a chain with a
// tampered digest, and a decision Operations does not hold for an open
// case.
func TestOP1GrantExchangeRefusals(t *testing.T) {
	t.Parallel()
	f := setup(t)
	expired := f.request(t, alice)
	f.now = f.now.Add(10 * time.Minute)
	_, err := f.x.Exchange(t.Context(), expired)
	require.ErrorIs(t, err, grants.ErrAssertionExpired)

	strangerKey, _, err := workload.Generate()
	require.NoError(t, err)
	stranger, err := grants.NewAssertionSigner(idp, strangerKey, nil)
	require.NoError(t, err)
	untrusted := f.request(t, alice)
	untrusted.Assertion, err = stranger.Assert(alice, time.Minute)
	require.NoError(t, err)
	_, err = f.x.Exchange(t.Context(), untrusted)
	require.ErrorIs(t, err, grants.ErrAssertion)

	_, err = f.x.Exchange(t.Context(), f.request(t, bob))
	require.ErrorIs(t, err, grants.ErrNotAuthorized, "bob approved; alice executes")

	wrongCaller := f.request(t, alice)
	wrongCaller.Workload = "owner.billing"
	_, err = f.x.Exchange(t.Context(), wrongCaller)
	require.ErrorIs(t, err, grants.ErrNotAuthorized)

	tampered := f.request(t, alice)
	tampered.Decision.Decision.Digest = tampered.Candidate.Candidate.Digest
	_, err = f.x.Exchange(t.Context(), tampered)
	require.ErrorIs(t, err, grants.ErrNotAuthorized)

	f.ops.answer = ownerread.Conflicting
	_, err = f.x.Exchange(t.Context(), f.request(t, alice))
	require.ErrorIs(t, err, grants.ErrDecisionNotCurrent)

	var n int
	require.NoError(t, f.admin.QueryRow(t.Context(), `SELECT count(*) FROM grants.command_grant_exchanges`).Scan(&n))
	require.Zero(t, n)
}

// OP-1 (issue 31): eight concurrent exchanges of one assertion store one
// result and all return its grant.
func TestOP1ConcurrentExchangesOfOneAssertion(t *testing.T) {
	t.Parallel()
	f := setup(t)
	req := f.request(t, alice)
	var wg sync.WaitGroup
	got := make([]grants.Exchanged, 8)
	errs := make([]error, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = f.x.Exchange(t.Context(), req)
		}()
	}
	wg.Wait()
	for i := range got {
		require.NoError(t, errs[i])
		require.Equal(t, got[0].Grant, got[i].Grant)
	}
	var n int
	require.NoError(t, f.admin.QueryRow(t.Context(), `SELECT count(*) FROM grants.command_grant_exchanges`).Scan(&n))
	require.Equal(t, 1, n)
}

// OP-1 (issue 31; GR001.exchanges-immutable, GR001.exchanges-no-truncate):
// an exchange result is a fact PostgreSQL keeps: the
// issuer's role holds no grant to change or remove it, the trigger refuses even the owner (GR001), and Billing's role,
// which consumes grants, can neither read nor write the issuer's table.
func TestOP1GrantExchangesAreTheIssuersOwn(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, err := f.x.Exchange(t.Context(), f.request(t, alice))
	require.NoError(t, err)
	code := func(pool *pgxpool.Pool, stmt string) string {
		_, err := pool.Exec(t.Context(), stmt)
		var pg *pgconn.PgError
		require.True(t, errors.As(err, &pg), "%s: %v", stmt, err)
		return pg.Code
	}
	require.Equal(t, pgerrcode.InsufficientPrivilege, code(f.grantsDB, "UPDATE grants.command_grant_exchanges SET grant_jws = 'x'"), "no UPDATE grant")
	require.Equal(t, pgerrcode.InsufficientPrivilege, code(f.grantsDB, "DELETE FROM grants.command_grant_exchanges"), "no DELETE grant")
	require.Equal(t, grants.CodeInsertOnly, code(f.admin, "UPDATE grants.command_grant_exchanges SET grant_jws = 'x'"), "the trigger refuses even the owner")
	require.Equal(t, grants.CodeInsertOnly, code(f.admin, "DELETE FROM grants.command_grant_exchanges"))
	require.Equal(t, grants.CodeInsertOnly, code(f.admin, "TRUNCATE grants.command_grant_exchanges"))
	require.Equal(t, pgerrcode.InsufficientPrivilege, code(f.billingDB, "SELECT 1 FROM grants.command_grant_exchanges"))
	require.Equal(t, pgerrcode.InsufficientPrivilege, code(f.grantsDB, "SELECT 1 FROM billing.consumed_command_grants"))
}
