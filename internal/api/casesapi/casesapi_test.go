package casesapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/reconciliation"
	admissionschema "github.com/oceanway/core/internal/admission/schema"
	"github.com/oceanway/core/internal/api"
	"github.com/oceanway/core/internal/api/apigen"
	"github.com/oceanway/core/internal/api/casesapi"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/billingtest"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/casegateway"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/grants"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/operations/cases"
	"github.com/oceanway/core/internal/operations/operationstest"
	"github.com/oceanway/core/internal/operations/projector"
	operationsschema "github.com/oceanway/core/internal/operations/schema"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/release"
	"github.com/oceanway/core/internal/workload"
)

const (
	idp   = "https://idp.example.org"
	alice = "workforce:alice@example.org"
	bob   = "workforce:bob@example.org"
)

// env is Operations' case operations behind the API's handler, on a core
// database with one reservation in an open case: the chain in process
// (Operations, Core's grant exchange, Billing's resolution, each on its own
// role) and operators with assertions of a trusted test identity provider.
type env struct {
	admin     *pgxpool.Pool
	billingDB *pgxpool.Pool
	projector *projector.Projector
	c         billingtest.InCase
	srv       *httptest.Server
	router    routers.Router
	idp       *grants.AssertionSigner
	late      *grants.AssertionSigner // the trusted provider's key, ten minutes ago
	foreign   *grants.AssertionSigner // the same issuer name, another key
	workload  *workload.Signer        // a workload, not an operator
}

func setup(t *testing.T) *env {
	t.Helper()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core},
		Lines: []migrate.Line{outboxschema.Line(), admissionschema.Line(), billingschema.Line(), operationsschema.Line()}, MaxConns: 4})
	admin, dsn := b.Core(), b.DSNs[boundary.Core]
	_, err := release.Bootstrap(t.Context(), admin, release.BootstrapParams{ProjectionName: projector.ProjectionName, ProjectionVersion: 1, SourceRelease: "test"})
	require.NoError(t, err)
	opsDB := dbtest.RolePool(t, dsn, operationsschema.RoleOperations)
	keysDB := dbtest.RolePool(t, dsn, operationsschema.RoleOperations) // the API's transactions hold their own connections
	grantsDB := dbtest.RolePool(t, dsn, billingschema.RoleGrants)
	billingDB := dbtest.RolePool(t, dsn, billingschema.RoleBilling)

	// A reservation in its first case, projected into an open Operations case.
	c := billingtest.EnterCase(t, admin, billingDB, cases.Identities{Pool: opsDB})
	p, err := projector.New(opsDB, projector.Config{Inbox: inbox.Config{LockTimeout: time.Second},
		BillingReads: billing.Reads{DB: billingDB}, FinalizationDecisionReads: billing.Reads{DB: billingDB}, ResolutionAppliedReads: billing.Reads{DB: billingDB}})
	require.NoError(t, err)
	_, err = p.Consume(t.Context(), operationstest.DeliveryV1(c.CaseRequested))
	require.NoError(t, err)

	idpPriv, idpPub, err := workload.Generate()
	require.NoError(t, err)
	otherPriv, _, err := workload.Generate()
	require.NoError(t, err)
	grantPriv, grantPub, err := workload.Generate()
	require.NoError(t, err)
	actors, err := grants.NewAssertionVerifier(grants.ActorIssuer{Issuer: idp, Key: idpPub})
	require.NoError(t, err)
	e := &env{admin: admin, billingDB: billingDB, projector: p, c: c}
	e.idp, err = grants.NewAssertionSigner(idp, idpPriv, nil)
	require.NoError(t, err)
	e.late, err = grants.NewAssertionSigner(idp, idpPriv, func() time.Time { return time.Now().Add(-10 * time.Minute) })
	require.NoError(t, err)
	e.foreign, err = grants.NewAssertionSigner(idp, otherPriv, nil)
	require.NoError(t, err)
	e.workload, err = workload.NewSigner(workload.SignerConfig{Workload: casegateway.Workload, Key: otherPriv})
	require.NoError(t, err)
	grantSigner, err := grants.NewSigner("core.grants", grantPriv)
	require.NoError(t, err)
	grantVerifier, err := grants.NewVerifier("core.grants", grantPub)
	require.NoError(t, err)

	commands := cases.Commands{Pool: opsDB, Workload: casegateway.Workload}
	gw := casegateway.Gateway{Actors: actors, Operations: casegateway.LocalOperations{Actors: actors, Commands: commands},
		Grants:  grants.Exchanger{Pool: grantsDB, Signer: grantSigner, Assertions: actors, Decisions: commands},
		Billing: casegateway.BillingResolutions{Pool: billingDB, Grants: grantVerifier}}
	h, err := api.Handler(api.Config{Cases: casesapi.Server{Operations: opsDB, Gateway: gw},
		Served: map[api.Owner]api.Served{api.OwnerOperations: {Actors: casesapi.Actors{Verifier: actors},
			Keys: &api.KeyStore{Pool: keysDB, Table: api.KeyTables[api.OwnerOperations]}}}})
	require.NoError(t, err)
	e.srv = httptest.NewServer(h)
	t.Cleanup(e.srv.Close)
	doc, err := api.LoadDocument()
	require.NoError(t, err)
	e.router, err = legacy.NewRouter(doc)
	require.NoError(t, err)
	return e
}

// as is a fresh assertion of the trusted provider that who is acting.
func (e *env) as(t *testing.T, who string) string {
	t.Helper()
	return assert(t, e.idp, who)
}

func assert(t *testing.T, s *grants.AssertionSigner, who string) string {
	t.Helper()
	a, err := s.Assert(who, time.Minute)
	require.NoError(t, err)
	return a
}

type reply struct {
	status   int
	ctype    string
	replayed bool
	body     []byte
}

// call sends one request and validates the answer against the document
// (every documented response: status, content type and body schema).
func (e *env) call(t *testing.T, method, path, token, key, body string) reply {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, e.srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	e.requireDocumented(t, req, resp, raw)
	return reply{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), replayed: resp.Header.Get("Idempotent-Replayed") == "true", body: raw}
}

// requireDocumented validates a response against the document.
func (e *env) requireDocumented(t *testing.T, req *http.Request, resp *http.Response, raw []byte) {
	t.Helper()
	vreq, err := http.NewRequest(req.Method, "http://api"+req.URL.RequestURI(), nil)
	require.NoError(t, err)
	route, params, err := e.router.FindRoute(vreq)
	if err != nil {
		require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"), "an undocumented path is still a problem")
		return
	}
	err = openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route},
		Status:                 resp.StatusCode, Header: resp.Header, Body: io.NopCloser(bytes.NewReader(raw)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true},
	})
	require.NoError(t, err, "%s %s answered %d %s", req.Method, req.URL.Path, resp.StatusCode, raw)
}

func problemCode(t *testing.T, r reply) string {
	t.Helper()
	require.Equal(t, "application/problem+json", r.ctype, string(r.body))
	var p apigen.Problem
	require.NoError(t, json.Unmarshal(r.body, &p))
	require.Equal(t, api.ProblemBase+p.Code, p.Type, "a stable type per code")
	require.Equal(t, r.status, p.Status)
	return p.Code
}

func decode[T any](t *testing.T, r reply) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(r.body, &v), string(r.body))
	return v
}

func (e *env) count(t *testing.T, table string) int {
	t.Helper()
	var n int
	require.NoError(t, e.admin.QueryRow(t.Context(), "SELECT count(*) FROM "+table).Scan(&n))
	return n
}

// requestBody is a resolution request with the case's identity as its
// evidence.
func (e *env) requestBody(justification string) string {
	q := e.c.Case.Identity
	b, _ := json.Marshal(apigen.CaseResolutionRequest{Justification: justification, Evidence: []apigen.EvidenceReference{{
		EvidenceKind: "billing_finalization_case", Object: apigen.Quadruple{Ref: q.Ref, SchemaVersion: q.SchemaVersion,
			DigestAlgorithmVersion: string(q.DigestAlgorithmVersion), Digest: q.Digest}}}})
	return string(b)
}

func (e *env) requestPath() string {
	return "/v1/cases/" + e.c.Case.ReconciliationCaseRef + "/resolution-requests"
}

func approvalPath(ref string) string { return "/v1/case-resolution-requests/" + ref + "/approval" }
func applicationPath(ref string) string {
	return "/v1/case-resolution-requests/" + ref + "/application"
}

// request has alice request the case's re-evaluation under key and returns
// the request's ref.
func (e *env) request(t *testing.T, key string) (string, reply) {
	t.Helper()
	r := e.call(t, http.MethodPost, e.requestPath(), e.as(t, alice), key, e.requestBody("the provider corrected the usage"))
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	ch := decode[apigen.CaseChain](t, r)
	return ch.Request.Object.Ref, r
}

// resolve delivers Billing's applied event to the coordinator (which
// reopens the fence) and to the projector (which closes the case once
// Billing's read confirms the fact).
func (e *env) resolve(t *testing.T) {
	t.Helper()
	var body []byte
	require.NoError(t, e.admin.QueryRow(t.Context(), `SELECT event_envelope FROM outbox.outbox_events WHERE event_type = $1`,
		envelope.BillingFinalizationResolutionAppliedV1).Scan(&body))
	ev, err := envelope.DecodeEnvelope(body)
	require.NoError(t, err)
	coordinator, err := billing.NewCoordinator(e.billingDB, billing.CoordinatorConfig{Inbox: inbox.Config{LockTimeout: time.Second}})
	require.NoError(t, err)
	d, err := billingtest.CoordinatorDelivery(ev)
	require.NoError(t, err)
	_, err = coordinator.Consume(t.Context(), d)
	require.NoError(t, err)
	_, err = e.projector.Consume(t.Context(), operationstest.DeliveryV1(ev))
	require.NoError(t, err)
}

// OP-1 through the API (issue 33): listCases and getCase read the real
// open case the projector materialised from Billing's case request, with
// its identity reservation; a case Operations never had is 404.
func TestOP1ListAndGetCasesOverTheAPI_Issue33(t *testing.T) {
	t.Parallel()
	e := setup(t)
	k := e.c.Case
	r := e.call(t, http.MethodGet, "/v1/cases?state=open", e.as(t, bob), "", "")
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	list := decode[apigen.CaseList](t, r)
	require.Len(t, list.Cases, 1)
	got := list.Cases[0]
	require.Equal(t, k.ReconciliationCaseRef, got.ReconciliationCaseRef)
	require.Equal(t, k.ReconciliationGeneration, got.ReconciliationGeneration)
	require.Equal(t, apigen.CaseState("open"), got.State)
	require.Equal(t, k.FenceID, got.BillingFinalizationFenceId.String())
	require.Equal(t, k.BillingReservationID, got.BillingReservationId.String())
	require.Equal(t, k.RunID, got.RunId.String())
	require.Equal(t, k.Identity.Ref, got.FinalizationCaseIdentityReservation.Ref)
	require.Equal(t, k.Identity.Digest, got.FinalizationCaseIdentityReservation.Digest)
	require.Empty(t, got.Requests)

	r = e.call(t, http.MethodGet, "/v1/cases/"+k.ReconciliationCaseRef, e.as(t, bob), "", "")
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Equal(t, got, decode[apigen.Case](t, r))

	r = e.call(t, http.MethodGet, "/v1/cases?state=resolved&limit=5", e.as(t, bob), "", "")
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Empty(t, decode[apigen.CaseList](t, r).Cases)

	r = e.call(t, http.MethodGet, "/v1/cases/fcase-nothing-here", e.as(t, bob), "", "")
	require.Equal(t, http.StatusNotFound, r.status)
	require.Equal(t, api.CodeNotFound, problemCode(t, r))
}

// OP-1 through the API (issue 33): alice requests, bob approves, alice
// applies: 201 with the decision, Core's grant exchange result and
// Billing's applied fact, each a contract object its strict decoder
// accepts; once the coordinator and the projector have Billing's event the
// case is resolved in getCase and listCases?state=resolved, and a new
// request on it is 409 case_not_open. The same Idempotency-Key returns the
// first response byte for byte (the apply's even with a fresh assertion).
func TestOP1CaseChainOverTheAPI_Issue33(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ref, first := e.request(t, "req-1")
	ch := decode[apigen.CaseChain](t, first)
	req, err := reconciliation.DecodeCommandRequest([]byte(ch.Request.Body))
	require.NoError(t, err)
	require.Equal(t, ch.Request.Object.Digest, req.Request.Digest)
	require.Equal(t, alice, req.RequesterWorkforcePrincipalID)
	require.Equal(t, e.c.Case, req.Case)
	preview, err := reconciliation.DecodeImpactPreview([]byte(ch.Preview.Body))
	require.NoError(t, err)
	require.Equal(t, req.Request, preview.CommandRequest)
	require.Nil(t, ch.Approval)

	again := e.call(t, http.MethodPost, e.requestPath(), e.as(t, alice), "req-1", e.requestBody("the provider corrected the usage"))
	require.Equal(t, first.status, again.status)
	require.Equal(t, first.body, again.body, "the stored first response, byte for byte")
	require.True(t, again.replayed)

	r := e.call(t, http.MethodPost, approvalPath(ref), e.as(t, bob), "approve-1", "")
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	approved := decode[apigen.CaseChain](t, r)
	require.NotNil(t, approved.Approval)
	approval, err := reconciliation.DecodeApproval([]byte(approved.Approval.Body))
	require.NoError(t, err)
	require.Equal(t, bob, approval.ApproverWorkforcePrincipalID)

	applied := e.call(t, http.MethodPost, applicationPath(ref), e.as(t, alice), "apply-1", "")
	require.Equal(t, http.StatusCreated, applied.status, string(applied.body))
	res := decode[apigen.CaseResolution](t, applied)
	require.NotNil(t, res.Chain.Decision)
	require.NotNil(t, res.Chain.Candidate)
	require.NotNil(t, res.Chain.JitActivation)
	decision, err := reconciliation.DecodeDecision([]byte(res.Chain.Decision.Body))
	require.NoError(t, err)
	require.Equal(t, res.Chain.Decision.Object.Ref, decision.Decision.Ref)
	require.Equal(t, alice, decision.ActorWorkforcePrincipalID)
	exchange, err := reconciliation.DecodeGrantExchangeResult([]byte(res.GrantExchange.Body))
	require.NoError(t, err)
	require.Equal(t, res.GrantExchange.Object.Digest, exchange.Result.Digest)
	require.Equal(t, decision.Decision, exchange.Decision)
	require.Equal(t, casegateway.Workload, exchange.BoundWorkload)
	fact, err := reconciliation.DecodeApplied([]byte(res.ResolutionApplied.Body))
	require.NoError(t, err)
	require.Equal(t, res.ResolutionApplied.Object.Digest, fact.Applied.Digest)
	require.Equal(t, e.c.Case, fact.Case)
	require.Equal(t, decision.Decision, fact.Decision)
	require.Equal(t, exchange.GrantJTI, fact.GrantJTI)

	replay := e.call(t, http.MethodPost, applicationPath(ref), e.as(t, alice), "apply-1", "")
	require.Equal(t, applied.body, replay.body, "a lost answer: the first response, even with a fresh assertion")
	require.True(t, replay.replayed)
	require.Equal(t, 3, e.count(t, "operations.api_idempotency_keys"), "one stored response per key")

	e.resolve(t)
	r = e.call(t, http.MethodGet, "/v1/cases/"+e.c.Case.ReconciliationCaseRef, e.as(t, bob), "", "")
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	kase := decode[apigen.Case](t, r)
	require.Equal(t, apigen.CaseState("resolved"), kase.State)
	require.NotNil(t, kase.ResolvedBy)
	require.Equal(t, alice, *kase.ResolvedBy)
	require.Len(t, kase.Requests, 1)
	require.Equal(t, ref, kase.Requests[0].RequestRef)
	require.Equal(t, bob, *kase.Requests[0].Approver)
	require.Equal(t, decision.Decision.Ref, *kase.Requests[0].DecisionRef)

	r = e.call(t, http.MethodGet, "/v1/cases?state=resolved", e.as(t, bob), "", "")
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	resolved := decode[apigen.CaseList](t, r).Cases
	require.Len(t, resolved, 1)
	require.Equal(t, kase, resolved[0])
	r = e.call(t, http.MethodGet, "/v1/cases?state=open", e.as(t, bob), "", "")
	require.Empty(t, decode[apigen.CaseList](t, r).Cases)

	r = e.call(t, http.MethodPost, e.requestPath(), e.as(t, bob), "req-after", e.requestBody("again"))
	require.Equal(t, http.StatusConflict, r.status, string(r.body))
	require.Equal(t, api.CodeCaseNotOpen, problemCode(t, r))
}

// OP-1 through the API (issue 33): the chain's refusals with their
// documented status and code, none stored under its key: the same key
// with another body (422 idempotency_key_reused); alice approving her own
// request (409 approver_conflict); applying before approval (409
// request_not_approved); bob applying alice's request (409 not_requester);
// an unknown case or request (404).
func TestOP1CaseChainRefusalsOverTheAPI_Issue33(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ref, _ := e.request(t, "req-1")

	r := e.call(t, http.MethodPost, e.requestPath(), e.as(t, alice), "req-1", e.requestBody("another justification"))
	require.Equal(t, http.StatusUnprocessableEntity, r.status)
	require.Equal(t, api.CodeIdempotencyKeyReused, problemCode(t, r))

	r = e.call(t, http.MethodPost, approvalPath(ref), e.as(t, alice), "approve-own", "")
	require.Equal(t, http.StatusConflict, r.status, string(r.body))
	require.Equal(t, api.CodeApproverConflict, problemCode(t, r))

	r = e.call(t, http.MethodPost, applicationPath(ref), e.as(t, alice), "apply-early", "")
	require.Equal(t, http.StatusConflict, r.status, string(r.body))
	require.Equal(t, api.CodeNotApproved, problemCode(t, r))

	r = e.call(t, http.MethodPost, approvalPath(ref), e.as(t, bob), "approve-1", "")
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	r = e.call(t, http.MethodPost, applicationPath(ref), e.as(t, bob), "apply-bob", "")
	require.Equal(t, http.StatusConflict, r.status, string(r.body))
	require.Equal(t, api.CodeNotRequester, problemCode(t, r))

	r = e.call(t, http.MethodPost, "/v1/cases/fcase-nothing-here/resolution-requests", e.as(t, alice), "req-nowhere", e.requestBody("x"))
	require.Equal(t, http.StatusNotFound, r.status, string(r.body))
	require.Equal(t, api.CodeNotFound, problemCode(t, r))
	for _, path := range []string{approvalPath("frcr-nothing-here"), applicationPath("frcr-nothing-here")} {
		r = e.call(t, http.MethodPost, path, e.as(t, bob), "unknown", "")
		require.Equal(t, http.StatusNotFound, r.status, "%s: %s", path, r.body)
		require.Equal(t, api.CodeNotFound, problemCode(t, r))
	}

	require.Equal(t, 1, e.count(t, "operations.resolution_command_requests"))
	require.Equal(t, 0, e.count(t, "operations.resolution_decisions"))
	require.Equal(t, 2, e.count(t, "operations.api_idempotency_keys"), "only the two successes are stored")

	// A refusal leaves its key free: alice's apply-early now applies.
	r = e.call(t, http.MethodPost, applicationPath(ref), e.as(t, alice), "apply-early", "")
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
}

// OP-1 through the API (issue 33): only an operator's actor assertion of a
// trusted identity provider, valid now, authenticates: an expired one, one
// signed with another key under the same issuer name, a workload token
// and none at all are 401, and nothing is written, neither the command nor
// a stored response.
func TestOP1CaseOperationsRefuseUnauthenticatedCallers_Issue33(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ref, _ := e.request(t, "req-1")
	token, err := e.workload.Sign(api.Audience(api.OwnerOperations), api.Scope("requestCaseResolution"))
	require.NoError(t, err)
	requests, keys := e.count(t, "operations.resolution_command_requests"), e.count(t, "operations.api_idempotency_keys")
	for name, bearer := range map[string]string{
		"expired": assert(t, e.late, alice), "foreign identity provider": assert(t, e.foreign, alice), "workload token": token, "none": "",
	} {
		for _, c := range []struct{ method, path, key, body string }{
			{http.MethodGet, "/v1/cases", "", ""},
			{http.MethodGet, "/v1/cases/" + e.c.Case.ReconciliationCaseRef, "", ""},
			{http.MethodPost, e.requestPath(), "unauth-" + strings.ReplaceAll(name, " ", "-"), e.requestBody("x")},
			{http.MethodPost, approvalPath(ref), "unauth", ""},
			{http.MethodPost, applicationPath(ref), "unauth", ""},
		} {
			r := e.call(t, c.method, c.path, bearer, c.key, c.body)
			require.Equal(t, http.StatusUnauthorized, r.status, "%s: %s %s: %s", name, c.method, c.path, r.body)
			require.Equal(t, api.CodeUnauthorized, problemCode(t, r))
		}
	}
	require.Equal(t, requests, e.count(t, "operations.resolution_command_requests"))
	require.Equal(t, 0, e.count(t, "operations.resolution_command_approvals"))
	require.Equal(t, keys, e.count(t, "operations.api_idempotency_keys"))
}

// The operator's principal, never the key alone, owns a request: the same
// Idempotency-Key from bob is another request operation (casesapi derives
// it from principal and key), so bob's request is his own.
func TestOP1RequestOperationIsThePrincipalsKey_Issue33(t *testing.T) {
	t.Parallel()
	e := setup(t)
	aliceRef, _ := e.request(t, "shared-key")
	r := e.call(t, http.MethodPost, e.requestPath(), e.as(t, bob), "shared-key", e.requestBody("the provider corrected the usage"))
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	bobs := decode[apigen.CaseChain](t, r)
	require.NotEqual(t, aliceRef, bobs.Request.Object.Ref)
	req, err := reconciliation.DecodeCommandRequest([]byte(bobs.Request.Body))
	require.NoError(t, err)
	require.Equal(t, bob, req.RequesterWorkforcePrincipalID)
	require.Equal(t, envelope.DeriveID(casesapi.DerivationRequestOperation, map[string]any{"principal": bob, "idempotencyKey": "shared-key"}),
		req.CommandRequestOperationID)
}
