package casehttp_test

import (
	"crypto/ed25519"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/reconciliation"
	admissionschema "github.com/oceanway/core/internal/admission/schema"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/billingtest"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/casegateway"
	"github.com/oceanway/core/internal/casegateway/casehttp"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/grants"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/operations/cases"
	"github.com/oceanway/core/internal/operations/operationstest"
	"github.com/oceanway/core/internal/operations/projector"
	operationsschema "github.com/oceanway/core/internal/operations/schema"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/ownerread/operationsread"
	"github.com/oceanway/core/internal/release"
	"github.com/oceanway/core/internal/workload"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

const (
	idp   = "https://idp.example.org"
	alice = "workforce:alice@example.org"
	bob   = "workforce:bob@example.org"
)

type keyPair struct {
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
}

func keys(t *testing.T) keyPair {
	t.Helper()
	priv, pub, err := workload.Generate()
	require.NoError(t, err)
	return keyPair{priv, pub}
}

func signer(t *testing.T, name string, k keyPair) *workload.Signer {
	t.Helper()
	s, err := workload.NewSigner(workload.SignerConfig{Workload: name, Key: k.priv})
	require.NoError(t, err)
	return s
}

func verifier(t *testing.T, audience string, trusted map[string]keyPair) *workload.Verifier {
	t.Helper()
	var ts []workload.Trusted
	for name, k := range trusted {
		ts = append(ts, workload.Trusted{Workload: name, Key: k.pub})
	}
	v, err := workload.NewVerifier(workload.VerifierConfig{Audience: audience, Trusted: ts})
	require.NoError(t, err)
	return v
}

// world is the three owners each behind its own HTTP server (its own
// database role and keys), and the gateway calling them over HTTP.
type world struct {
	admin, billingDB *pgxpool.Pool
	projector        *projector.Projector
	gateway          casegateway.Gateway
	ops              *casehttp.Client // the gateway's client of Operations
	idp              *grants.AssertionSigner
	c                billingtest.InCase
}

func newWorld(t *testing.T) *world {
	t.Helper()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core},
		Lines: []migrate.Line{outboxschema.Line(), admissionschema.Line(), billingschema.Line(), operationsschema.Line()}, MaxConns: 12})
	admin, dsn := b.Core(), b.DSNs[boundary.Core]
	_, err := release.Bootstrap(t.Context(), admin, release.BootstrapParams{ProjectionName: projector.ProjectionName, ProjectionVersion: 1, SourceRelease: "test"})
	require.NoError(t, err)
	opsDB := dbtest.RolePool(t, dsn, operationsschema.RoleOperations)
	grantsDB := dbtest.RolePool(t, dsn, billingschema.RoleGrants)
	billingDB := dbtest.RolePool(t, dsn, billingschema.RoleBilling)

	// A reservation in its first case, projected into an open Operations case.
	ids := cases.Identities{Pool: opsDB}
	c := billingtest.EnterCase(t, admin, billingDB, ids)
	p, err := projector.New(opsDB, projector.Config{Inbox: inbox.Config{LockTimeout: time.Second},
		BillingReads: billing.Reads{DB: billingDB}, FinalizationDecisionReads: billing.Reads{DB: billingDB}, ResolutionAppliedReads: billing.Reads{DB: billingDB}})
	require.NoError(t, err)
	_, err = p.Consume(t.Context(), operationstest.DeliveryV1(c.CaseRequested))
	require.NoError(t, err)

	gw, core, idpKey, grantKey := keys(t), keys(t), keys(t), keys(t)
	actors, err := grants.NewAssertionVerifier(grants.ActorIssuer{Issuer: idp, Key: idpKey.pub})
	require.NoError(t, err)
	idpSigner, err := grants.NewAssertionSigner(idp, idpKey.priv, nil)
	require.NoError(t, err)
	grantSigner, err := grants.NewSigner("core.grants", grantKey.priv)
	require.NoError(t, err)
	grantVerifier, err := grants.NewVerifier("core.grants", grantKey.pub)
	require.NoError(t, err)

	serve := func(cfg casehttp.ServerConfig) string {
		h, err := casehttp.Handler(cfg)
		require.NoError(t, err)
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	commands := cases.Commands{Pool: opsDB, Workload: casegateway.Workload}
	opsURL := serve(casehttp.ServerConfig{Operations: casegateway.LocalOperations{Actors: actors, Commands: commands}, Decisions: commands,
		Verifiers: map[string]*workload.Verifier{casehttp.AudienceOperations: verifier(t, casehttp.AudienceOperations,
			map[string]keyPair{casegateway.Workload: gw, casehttp.WorkloadGrants: core})}})
	coreOps, err := casehttp.NewClient(opsURL, signer(t, casehttp.WorkloadGrants, core), nil)
	require.NoError(t, err)
	grantsURL := serve(casehttp.ServerConfig{Grants: grants.Exchanger{Pool: grantsDB, Signer: grantSigner, Assertions: actors, Decisions: coreOps},
		Verifiers: map[string]*workload.Verifier{casehttp.AudienceGrants: verifier(t, casehttp.AudienceGrants, map[string]keyPair{casegateway.Workload: gw})}})
	billingURL := serve(casehttp.ServerConfig{Billing: casegateway.BillingResolutions{Pool: billingDB, Grants: grantVerifier},
		Verifiers: map[string]*workload.Verifier{casehttp.AudienceBilling: verifier(t, casehttp.AudienceBilling, map[string]keyPair{casegateway.Workload: gw})}})

	client := func(url string) *casehttp.Client {
		c, err := casehttp.NewClient(url, signer(t, casegateway.Workload, gw), nil)
		require.NoError(t, err)
		return c
	}
	w := &world{admin: admin, billingDB: billingDB, projector: p, idp: idpSigner, c: c, ops: client(opsURL)}
	w.gateway = casegateway.Gateway{Actors: actors, Operations: w.ops, Grants: client(grantsURL), Billing: client(billingURL)}
	return w
}

func (w *world) as(t *testing.T, who string) string {
	t.Helper()
	a, err := w.idp.Assert(who, time.Minute)
	require.NoError(t, err)
	return a
}

// OP-1 (issue 31, the ADR's cross-process gate): the whole chain with
// Operations, Core's grant issuer and Billing each behind its own HTTP
// server, database role and keys: the gateway requests, a second operator
// approves, the requester applies; Core reads Operations' decision over
// HTTP before it signs; Billing appends the applied fact and its event.
// Typed refusals cross the wire as their own errors (self-approval), and a
// replayed apply returns the first fact.
func TestOP1ChainAcrossProcesses(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ev := []reconciliation.EvidenceReference{{EvidenceKind: "billing_finalization_case", Object: w.c.Case.Identity}}
	req, err := w.gateway.Request(t.Context(), w.as(t, alice), cases.RequestInput{CaseRef: w.c.Case.ReconciliationCaseRef,
		OperationID: uuid.NewString(), Evidence: ev, Justification: "the provider corrected the usage"})
	require.NoError(t, err)
	ref := req.Request.Request.Ref
	_, err = w.gateway.Approve(t.Context(), w.as(t, alice), ref)
	require.ErrorIs(t, err, reconciliation.ErrSelfApproval, "the typed refusal crosses the wire")
	_, err = w.gateway.Approve(t.Context(), w.as(t, bob), ref)
	require.NoError(t, err)

	assertion := w.as(t, alice)
	applied, err := w.gateway.Apply(t.Context(), assertion, ref)
	require.NoError(t, err)
	require.False(t, applied.Result.Replayed)
	require.Equal(t, w.c.Case, applied.Result.Fact.Case)
	again, err := w.gateway.Apply(t.Context(), assertion, ref)
	require.NoError(t, err)
	require.True(t, again.Result.Replayed, "a lost response: the same decision, grant and fact")
	require.Equal(t, applied.Grant, again.Grant)
	require.Equal(t, applied.Result.Body, again.Result.Body)

	var destinations []string
	require.NoError(t, w.admin.QueryRow(t.Context(), `SELECT array_agg(destination ORDER BY destination) FROM outbox.outbox_deliveries
		WHERE event_id = $1`, applied.Result.EventID).Scan(&destinations))
	require.Equal(t, []string{"billing_finalization_coordinator", "core_operations"}, destinations)

	// Both deliveries: the coordinator reopens the fence, the projector
	// closes the case after Billing's read confirms the fact.
	var body []byte
	require.NoError(t, w.admin.QueryRow(t.Context(), `SELECT event_envelope FROM outbox.outbox_events WHERE event_id = $1`,
		applied.Result.EventID).Scan(&body))
	resolution, err := envelope.DecodeEnvelope(body)
	require.NoError(t, err)
	coordinator, err := billing.NewCoordinator(w.billingDB, billing.CoordinatorConfig{Inbox: inbox.Config{LockTimeout: time.Second}})
	require.NoError(t, err)
	_, err = coordinator.Consume(t.Context(), coordinatorDelivery(t, resolution))
	require.NoError(t, err)
	_, err = w.projector.Consume(t.Context(), operationstest.DeliveryV1(resolution))
	require.NoError(t, err)
	var fence, kase string
	require.NoError(t, w.admin.QueryRow(t.Context(), `SELECT f.coordination_state, c.state FROM billing.billing_finalization_fences f
		JOIN operations.finalization_cases c USING (billing_finalization_fence_id) WHERE f.billing_finalization_fence_id = $1`,
		w.c.Case.FenceID).Scan(&fence, &kase))
	require.Equal(t, billing.FencePendingEvaluation, fence, "re-evaluation is scheduled")
	require.Equal(t, "resolved", kase)
}

func coordinatorDelivery(t *testing.T, e *envelope.Envelope) transport.Delivery {
	t.Helper()
	d, err := billingtest.CoordinatorDelivery(e)
	require.NoError(t, err)
	return d
}

// OP-1 (issue 31): each call answers only its listed workloads, and only
// with a token for its audience and scope: the gateway cannot read
// Operations' decision as Core does.
func TestOP1CaseCallsRefuseOtherCallers(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	_, err := w.ops.ReadFinalizationResolutionDecision(t.Context(), operationsread.ResolutionDecisionRead{
		Decision: w.c.Case.Identity, Candidate: w.c.Case.Identity, CaseRef: w.c.Case.ReconciliationCaseRef, Generation: 1})
	require.ErrorIs(t, err, casehttp.ErrRefused)
	require.Contains(t, err.Error(), "caller_not_allowed")
}
