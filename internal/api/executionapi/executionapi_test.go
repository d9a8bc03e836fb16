package executionapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/admission"
	admissionschema "github.com/oceanway/core/internal/admission/schema"
	"github.com/oceanway/core/internal/api"
	"github.com/oceanway/core/internal/api/apigen"
	"github.com/oceanway/core/internal/api/executionapi"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	executionschema "github.com/oceanway/core/internal/execution/schema"
	"github.com/oceanway/core/internal/gateway"
	gatewayschema "github.com/oceanway/core/internal/gateway/schema"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/ownerread/coreread"
	"github.com/oceanway/core/internal/ownerread/ownerhttp"
	"github.com/oceanway/core/internal/release"
	"github.com/oceanway/core/internal/runtoken"
	"github.com/oceanway/core/internal/workload"
)

type env struct {
	core, exec *pgxpool.Pool // superuser pools: fixtures and counts
	adm        *admission.Service
	gw         *gateway.Service
	coreReads  *flakyCore
	srv        *httptest.Server
	signer     *workload.Signer // platform.main, trusted by Execution
	coreKey    *runtoken.Signer // Core's token key
	otherKey   *runtoken.Signer // a key Execution does not trust
	router     routers.Router
}

// flakyCore is Core's manifest read in process that can be made to not
// answer (as ownerhttp reports an owner that did not answer).
type flakyCore struct {
	reads admission.Reads
	down  atomic.Bool
}

func (f *flakyCore) ReadRunAdmissionManifest(ctx context.Context, req coreread.RunAdmissionManifestRead) (coreread.ManifestResult, error) {
	if f.down.Load() {
		return coreread.ManifestResult{}, &ownerhttp.Error{Read: "readRunAdmissionManifest", Status: http.StatusServiceUnavailable,
			Code: ownerhttp.CodeUnavailable, Message: "core is restarting"}
	}
	return f.reads.ReadRunAdmissionManifest(ctx, req)
}

func setup(t *testing.T) *env {
	t.Helper()
	b := dbtest.New(t, dbtest.Opts{
		Boundaries: []boundary.Boundary{boundary.Core, boundary.Execution, boundary.Gateway},
		Lines: []migrate.Line{outboxschema.Line(), admissionschema.Line(), billingschema.Line(), executionschema.Line(),
			gatewayschema.Line()},
		MaxConns: 3,
	})
	for _, bd := range []boundary.Boundary{boundary.Core, boundary.Execution, boundary.Gateway} {
		_, err := release.Bootstrap(t.Context(), b.Pool(bd), release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1, SourceRelease: "test"})
		require.NoError(t, err)
	}
	// The API runs as the Execution owner's role, as serve does.
	execRole := dbtest.RolePool(t, b.DSNs[boundary.Execution], executionschema.RoleExecution)
	e := &env{core: b.Core(), exec: b.Execution(), adm: admission.New(b.Core()), gw: gateway.New(b.Gateway()),
		coreReads: &flakyCore{reads: admission.Reads{DB: b.Core()}}}

	priv, pub, err := workload.Generate()
	require.NoError(t, err)
	e.signer, err = workload.NewSigner(workload.SignerConfig{Workload: "platform.main", Key: priv})
	require.NoError(t, err)
	v, err := workload.NewVerifier(workload.VerifierConfig{Audience: api.Audience(api.OwnerExecution),
		Trusted: []workload.Trusted{{Workload: "platform.main", Key: pub}}})
	require.NoError(t, err)

	tokenKey, tokenPub, err := workload.Generate()
	require.NoError(t, err)
	e.coreKey, err = runtoken.NewSigner(tokenKey)
	require.NoError(t, err)
	otherKey, _, err := workload.Generate()
	require.NoError(t, err)
	e.otherKey, err = runtoken.NewSigner(otherKey)
	require.NoError(t, err)
	tokens, err := runtoken.NewVerifier(tokenPub)
	require.NoError(t, err)

	h, err := api.Handler(api.Config{
		Execution: executionapi.Server{Pool: execRole, Core: e.coreReads, Gateway: gateway.Reads{DB: b.Gateway()}, Tokens: tokens},
		Served: map[api.Owner]api.Served{api.OwnerExecution: {Verifier: v,
			Keys: &api.KeyStore{Pool: execRole, Table: api.KeyTables[api.OwnerExecution]}}},
	})
	require.NoError(t, err)
	e.srv = httptest.NewServer(h)
	t.Cleanup(e.srv.Close)
	doc, err := api.LoadDocument()
	require.NoError(t, err)
	e.router, err = legacy.NewRouter(doc)
	require.NoError(t, err)
	return e
}

type reply struct {
	status int
	ctype  string
	body   []byte
}

// call sends one request as platform.main for operation op and validates
// the answer against the document (status, content type and body schema).
func (e *env) call(t *testing.T, op, method, path, key, body string) reply {
	t.Helper()
	return e.callWith(t, e.token(t, api.Audience(api.OwnerExecution), op), method, path, key, body)
}

func (e *env) callWith(t *testing.T, token, method, path, key, body string) reply {
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
	return reply{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), body: raw}
}

// requireDocumented validates a response against the document.
func (e *env) requireDocumented(t *testing.T, req *http.Request, resp *http.Response, raw []byte) {
	t.Helper()
	vreq, err := http.NewRequest(req.Method, "http://api"+req.URL.Path, nil)
	require.NoError(t, err)
	route, params, err := e.router.FindRoute(vreq)
	require.NoError(t, err, "every path the tests call is documented")
	err = openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route},
		Status:                 resp.StatusCode, Header: resp.Header, Body: io.NopCloser(bytes.NewReader(raw)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true},
	})
	require.NoError(t, err, "%s %s answered %d %s", req.Method, req.URL.Path, resp.StatusCode, raw)
}

func (e *env) token(t *testing.T, audience, op string) string {
	t.Helper()
	tok, err := e.signer.Sign(audience, api.Scope(op))
	require.NoError(t, err)
	return tok
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

func decode[T any](t *testing.T, r reply, status int) T {
	t.Helper()
	require.Equal(t, status, r.status, string(r.body))
	var v T
	require.NoError(t, json.Unmarshal(r.body, &v))
	return v
}

// executionTables are what the Execution owner and its API write.
var executionTables = []string{"execution.run_execution_states", "execution.attempts", "execution.eligibility_facts",
	"execution.attempt_not_dispatched_facts", "execution.run_finalizations", "execution.api_idempotency_keys", "outbox.outbox_events"}

func (e *env) counts(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range executionTables {
		var n int
		require.NoError(t, e.exec.QueryRow(t.Context(), "SELECT count(*) FROM "+table).Scan(&n))
		out[table] = n
	}
	return out
}

// run is an admitted run with Core's token for it.
type run struct {
	res    admission.Result
	tenant contract.Tenant
	tok    *contract.RunExecutionToken
	body   []byte // the token's canonical bytes
	jws    string // signed with Core's key
}

func (e *env) admit(t *testing.T) run {
	t.Helper()
	ten := contract.Tenant{Kind: "organization", TenantID: uuid.NewString(), WorkspaceID: uuid.NewString()}
	res, err := e.adm.Admit(t.Context(), admission.Request{AdmissionOperationID: uuid.NewString(), TenantKind: ten.Kind,
		TenantID: ten.TenantID, WorkspaceID: ten.WorkspaceID, BillingAccountID: uuid.NewString(), ReservedCredits: 100})
	require.NoError(t, err)
	tok, body, err := admission.IssueRunExecutionToken(t.Context(), e.core, res.RunID, "ret-"+res.RunID, res.AdmittedAt)
	require.NoError(t, err)
	jws, err := e.coreKey.Sign(body)
	require.NoError(t, err)
	return run{res: res, tenant: ten, tok: tok, body: body, jws: jws}
}

func openBody(jws string) string { return `{"token":"` + jws + `"}` }

func (e *env) open(t *testing.T, r run) apigen.RunExecutionState {
	t.Helper()
	return decode[apigen.RunExecutionState](t, e.call(t, "openRun", http.MethodPost, "/v1/execution/runs", "open-"+r.res.RunID, openBody(r.jws)), http.StatusCreated)
}

const outputContract = `{"ref":"output-contract/text@1","schemaVersion":"1","digestAlgorithmVersion":"jcs-sha256-v1","digest":"ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"}`

func attemptBody(step, attempt, gatewayDeployment string) string {
	return `{"runStepId":"` + step + `","executionAttemptId":"` + attempt + `","modelDeploymentId":"model-deploy/text-large",` +
		`"gatewayDeploymentId":"` + gatewayDeployment + `","routingPolicyRevision":1,"outputContract":` + outputContract + `}`
}

func attemptsPath(runID string) string { return "/v1/execution/runs/" + runID + "/attempts" }
func closurePath(runID string) string  { return "/v1/execution/runs/" + runID + "/closure" }
func eligibilityPath(attemptID string) string {
	return "/v1/execution/attempts/" + attemptID + "/eligibility"
}
func dispositionBody(disposition string) string { return `{"disposition":"` + disposition + `"}` }

func (e *env) attempt(t *testing.T, runID, key string) apigen.Attempt {
	t.Helper()
	return decode[apigen.Attempt](t, e.call(t, "createAttempt", http.MethodPost, attemptsPath(runID), key,
		attemptBody(uuid.NewString(), uuid.NewString(), "gw-eu-1")), http.StatusCreated)
}

func requireQuad(t *testing.T, want strict.Quadruple, got apigen.Quadruple) {
	t.Helper()
	require.Equal(t, apigen.Quadruple{Ref: want.Ref, SchemaVersion: want.SchemaVersion, DigestAlgorithmVersion: string(want.DigestAlgorithmVersion), Digest: want.Digest}, got)
}

// EX-2, EX-3, GW-1 over the API (issue 33): openRun with Core's signed
// token → createAttempt → finalizeAttemptEligibility (dispatched on a bound
// slot; not_dispatched only on a slot the Gateway rejected before binding,
// a bound slot is 409 slot_not_proven_rejected) → closeRun; getRunClosure
// and getAttemptEligibility answer the same facts; every body recomputes
// its quadruple under the contracts' strict decoders.
func TestEX2EX3RunLifecycleOverTheAPI(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	r := e.admit(t)

	st := e.open(t, r)
	require.Equal(t, r.res.RunID, st.RunId.String())
	require.Equal(t, r.res.BillingAccountID, st.BillingAccountId.String())
	require.Equal(t, r.res.BillingReservationID, st.BillingReservationId.String())
	requireQuad(t, r.tok.Token, st.RunExecutionToken)
	requireQuad(t, r.res.Manifest, st.Manifest)
	require.Equal(t, apigen.AcceptingAttempts, st.State)
	require.EqualValues(t, 1, st.StateVersion)
	// The same token under another key reopens nothing: the same state.
	again := decode[apigen.RunExecutionState](t, e.call(t, "openRun", http.MethodPost, "/v1/execution/runs", "open-again", openBody(r.jws)), http.StatusCreated)
	require.Equal(t, st, again)

	runID := r.res.RunID
	noClosure := e.call(t, "getRunClosure", http.MethodGet, closurePath(runID), "", "")
	require.Equal(t, http.StatusNotFound, noClosure.status)
	require.Equal(t, api.CodeNotFound, problemCode(t, noClosure))

	// Three attempts: the Gateway binds one, rejects one before binding and
	// binds the third, which the platform wrongly reports not dispatched.
	attempts := map[string]apigen.Attempt{}
	for _, name := range []string{"bound", "rejected", "misreported"} {
		a := e.attempt(t, runID, "attempt-"+name)
		require.Equal(t, runID, a.RunId.String())
		m, err := contract.DecodeAttemptExecutionManifest([]byte(a.ManifestBody))
		require.NoError(t, err, "the manifest body recomputes")
		requireQuad(t, m.Manifest, a.Manifest)
		require.Equal(t, a.ExecutionAttemptId.String(), m.ExecutionAttemptID)
		require.Equal(t, r.res.Manifest, m.RunAdmissionManifest)
		d := gateway.Decision{Route: &contract.Route{ChannelID: "c", SupplyID: "s", CredentialVersion: 1, ProviderModel: "m", AdapterID: "a"}}
		if name == "rejected" {
			d = gateway.Decision{RejectReason: "no_capacity"}
		}
		_, err = e.gw.Dispatch(ctx, gateway.DispatchRequest{Tenant: r.tenant, ManifestBody: []byte(a.ManifestBody), Decision: d})
		require.NoError(t, err)
		attempts[name] = a
	}
	bound, rejected, misreported := attempts["bound"].ExecutionAttemptId.String(), attempts["rejected"].ExecutionAttemptId.String(),
		attempts["misreported"].ExecutionAttemptId.String()

	pending := e.call(t, "getAttemptEligibility", http.MethodGet, eligibilityPath(bound), "", "")
	require.Equal(t, http.StatusNotFound, pending.status)

	finalize := func(id, key, disposition string) reply {
		return e.call(t, "finalizeAttemptEligibility", http.MethodPost, eligibilityPath(id), key, dispositionBody(disposition))
	}
	notProven := finalize(misreported, "el-misreported-1", contract.DispositionNotDispatched)
	require.Equal(t, http.StatusConflict, notProven.status)
	require.Equal(t, api.CodeNotProvenRejected, problemCode(t, notProven))

	facts := map[string]apigen.Eligibility{}
	for id, disposition := range map[string]string{bound: contract.DispositionDispatched, rejected: contract.DispositionNotDispatched,
		misreported: contract.DispositionDispatched} {
		el := decode[apigen.Eligibility](t, finalize(id, "el-"+id, disposition), http.StatusCreated)
		require.Equal(t, id, el.ExecutionAttemptId.String())
		require.EqualValues(t, disposition, el.Disposition)
		f, err := contract.DecodeExecutionEligibilityFact([]byte(el.FactBody))
		require.NoError(t, err, "the fact body recomputes")
		requireQuad(t, f.Fact, el.Fact)
		require.Equal(t, runID, f.RunID)
		require.Equal(t, disposition, f.Disposition)
		if disposition == contract.DispositionNotDispatched {
			require.NotNil(t, el.AttemptNotDispatchedFact)
			requireQuad(t, f.NotDispatched, *el.AttemptNotDispatchedFact)
		} else {
			require.Nil(t, el.AttemptNotDispatchedFact)
		}
		read := decode[apigen.Eligibility](t, e.call(t, "getAttemptEligibility", http.MethodGet, eligibilityPath(id), "", ""), http.StatusOK)
		require.Equal(t, el, read, "the read answers the same fact")
		facts[id] = el
	}

	closed := e.call(t, "closeRun", http.MethodPost, closurePath(runID), "close-1", "")
	c := decode[apigen.RunClosure](t, closed, http.StatusCreated)
	require.Equal(t, runID, c.RunId.String())
	set, err := contract.DecodeRunAttemptSetManifest([]byte(c.AttemptSetBody))
	require.NoError(t, err)
	requireQuad(t, set.Manifest, c.AttemptSet)
	fact, err := contract.DecodeRunExecutionFinalizationFact([]byte(c.FinalizationFactBody))
	require.NoError(t, err)
	requireQuad(t, fact.Fact, c.FinalizationFact)
	require.Equal(t, set.Manifest, fact.AttemptSet)
	require.Equal(t, r.tok.Token, fact.Token, "the closure names the token the run was opened with")
	require.Len(t, set.Attempts, 3)
	for _, item := range set.Attempts {
		el := facts[item.ExecutionAttemptID]
		requireQuad(t, item.EligibilityFact, el.Fact)
		require.EqualValues(t, el.Disposition, item.DispatchDisposition)
	}

	read := e.call(t, "getRunClosure", http.MethodGet, closurePath(runID), "", "")
	require.Equal(t, c, decode[apigen.RunClosure](t, read, http.StatusOK), "the read answers the same closure")
	closedState := decode[apigen.RunExecutionState](t, e.call(t, "openRun", http.MethodPost, "/v1/execution/runs", "open-closed", openBody(r.jws)), http.StatusCreated)
	require.Equal(t, apigen.AttemptsClosed, closedState.State)
	require.EqualValues(t, 2, closedState.StateVersion)

	n := e.counts(t)
	require.Equal(t, 1, n["execution.run_finalizations"])
	require.Equal(t, 3, n["execution.eligibility_facts"])
	require.Equal(t, 1, n["execution.attempt_not_dispatched_facts"])
	require.Equal(t, 4, n["outbox.outbox_events"], "three eligibility events and one closure event")
}

// EX-2 (issue 33): openRun takes only a run execution token signed by
// Core's key: a token signed by another key, a tampered token, garbage, or
// a Core-signed payload that is not a RunExecutionToken@1 is 400
// run_token_invalid, and nothing is written (no run, no stored key).
func TestEX2OpenRunRefusesTokensNotSignedByCore(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r := e.admit(t)
	before := e.counts(t)

	foreign, err := e.otherKey.Sign(r.body)
	require.NoError(t, err)
	parts := strings.Split(r.jws, ".")
	require.Len(t, parts, 3)
	var forged map[string]any
	require.NoError(t, json.Unmarshal(r.body, &forged))
	forged["billingAccountId"] = uuid.NewString()
	forgedBody, err := json.Marshal(forged)
	require.NoError(t, err)
	tamperedPayload := parts[0] + "." + b64(forgedBody) + "." + parts[2]
	sig := []byte(parts[2])
	sig[3] ^= 0x01
	tamperedSignature := parts[0] + "." + parts[1] + "." + string(sig)
	notAToken, err := e.coreKey.Sign([]byte(`{"runId":"` + r.res.RunID + `"}`))
	require.NoError(t, err)

	for name, jws := range map[string]string{
		"another key": foreign, "tampered payload": tamperedPayload, "tampered signature": tamperedSignature,
		"garbage": "not-a-jws", "unsigned payload": b64(r.body), "not a RunExecutionToken@1": notAToken,
	} {
		got := e.call(t, "openRun", http.MethodPost, "/v1/execution/runs", "open-"+strings.ReplaceAll(name, " ", "-"), openBody(jws))
		require.Equal(t, http.StatusBadRequest, got.status, "%s: %s", name, got.body)
		require.Equal(t, api.CodeTokenInvalid, problemCode(t, got), name)
	}
	require.Equal(t, before, e.counts(t), "nothing written")
	require.Zero(t, before["execution.run_execution_states"])
	require.Zero(t, before["execution.api_idempotency_keys"])
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// EX-2 (issue 33): a Core-signed token that does not match Core's admission
// manifest (another run's manifest), a second token for an open run, and a
// token for a run Core does not know are refused with nothing written; a
// Core read that does not answer is 503 owner_read_unavailable, and the
// retry with the same key opens the run.
func TestEX2OpenRunManifestAndTokenConflicts(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a, b := e.admit(t), e.admit(t)
	sign := func(tok contract.RunExecutionToken) string {
		tok.Token = strict.Quadruple{Ref: tok.Token.Ref + "-forged"}
		body, err := contract.Seal(&tok)
		require.NoError(t, err)
		jws, err := e.coreKey.Sign(body)
		require.NoError(t, err)
		return jws
	}
	before := e.counts(t)

	// Run B's id with run A's manifest.
	other := *a.tok
	other.RunID = b.res.RunID
	got := e.call(t, "openRun", http.MethodPost, "/v1/execution/runs", "k-other-run", openBody(sign(other)))
	require.Equal(t, http.StatusConflict, got.status, string(got.body))
	require.Equal(t, api.CodeManifestConflict, problemCode(t, got))
	// Run A with another account than its manifest's.
	account := *a.tok
	account.BillingAccountID = uuid.NewString()
	got = e.call(t, "openRun", http.MethodPost, "/v1/execution/runs", "k-account", openBody(sign(account)))
	require.Equal(t, http.StatusConflict, got.status, string(got.body))
	require.Equal(t, api.CodeManifestConflict, problemCode(t, got))
	// A run Core never admitted.
	unknown := *a.tok
	unknown.RunID, unknown.BillingReservationID = uuid.NewString(), uuid.NewString()
	unknown.Manifest.Ref, unknown.Manifest.Digest = "ram-"+unknown.RunID, strings.Repeat("ab", 32)
	got = e.call(t, "openRun", http.MethodPost, "/v1/execution/runs", "k-unknown", openBody(sign(unknown)))
	require.Equal(t, http.StatusNotFound, got.status, string(got.body))
	require.Equal(t, api.CodeNotFound, problemCode(t, got))
	require.Equal(t, before, e.counts(t), "nothing written")

	// Core does not answer: 503, nothing written; the retry opens the run.
	e.coreReads.down.Store(true)
	got = e.call(t, "openRun", http.MethodPost, "/v1/execution/runs", "k-a", openBody(a.jws))
	require.Equal(t, http.StatusServiceUnavailable, got.status, string(got.body))
	require.Equal(t, api.CodeOwnerUnavailable, problemCode(t, got))
	require.Equal(t, before, e.counts(t), "nothing written")
	e.coreReads.down.Store(false)
	decode[apigen.RunExecutionState](t, e.call(t, "openRun", http.MethodPost, "/v1/execution/runs", "k-a", openBody(a.jws)), http.StatusCreated)

	// Run A is open with its token: Core's second token for it is refused.
	second := e.call(t, "openRun", http.MethodPost, "/v1/execution/runs", "k-second", openBody(sign(*a.tok)))
	require.Equal(t, http.StatusConflict, second.status, string(second.body))
	require.Equal(t, api.CodeTokenConflict, problemCode(t, second))
	n := e.counts(t)
	require.Equal(t, 1, n["execution.run_execution_states"])
	require.Equal(t, 1, n["execution.api_idempotency_keys"], "only the success is stored")
}

// Issue 33, Idempotency-Key on Execution's operations: the same key and
// body answer the first response byte for byte (openRun, createAttempt,
// finalizeAttemptEligibility, closeRun); the same key with another body is
// 422. EX-2's refusals: another route for an attempt id is 409
// attempt_conflict; closing with an attempt lacking its eligibility is 409
// eligibility_missing; another disposition is 409 eligibility_conflict; a
// second closure (new key) is 409 run_closed and so is a new attempt on the
// closed run; unknown runs and attempts are 404; an invalid output
// contract is 400. Refusals store nothing.
func TestEX2IdempotencyAndRefusalsOverTheAPI(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r := e.admit(t)
	runID := r.res.RunID

	first := e.call(t, "openRun", http.MethodPost, "/v1/execution/runs", "open-1", openBody(r.jws))
	require.Equal(t, http.StatusCreated, first.status, string(first.body))
	require.Equal(t, first, e.call(t, "openRun", http.MethodPost, "/v1/execution/runs", "open-1", openBody(r.jws)), "byte for byte")

	step, attemptID := uuid.NewString(), uuid.NewString()
	body := attemptBody(step, attemptID, "gw-eu-1")
	created := e.call(t, "createAttempt", http.MethodPost, attemptsPath(runID), "attempt-1", body)
	require.Equal(t, http.StatusCreated, created.status, string(created.body))
	// The same body written otherwise is the same request.
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &m))
	reordered, err := json.MarshalIndent(m, "", "  ")
	require.NoError(t, err)
	require.Equal(t, created, e.call(t, "createAttempt", http.MethodPost, attemptsPath(runID), "attempt-1", string(reordered)))
	reused := e.call(t, "createAttempt", http.MethodPost, attemptsPath(runID), "attempt-1", attemptBody(step, uuid.NewString(), "gw-eu-1"))
	require.Equal(t, http.StatusUnprocessableEntity, reused.status)
	require.Equal(t, api.CodeIdempotencyKeyReused, problemCode(t, reused))
	// The same attempt under a new key is the attempt as first created.
	sameAttempt := e.call(t, "createAttempt", http.MethodPost, attemptsPath(runID), "attempt-2", body)
	require.Equal(t, http.StatusCreated, sameAttempt.status)
	require.Equal(t, created.body, sameAttempt.body)

	before := e.counts(t)
	for name, c := range map[string]struct {
		op, method, path, body string
		status                 int
		code                   string
	}{
		"another route":       {"createAttempt", http.MethodPost, attemptsPath(runID), attemptBody(step, attemptID, "gw-us-2"), 409, api.CodeAttemptConflict},
		"eligibility missing": {"closeRun", http.MethodPost, closurePath(runID), "", 409, api.CodeEligibilityMissing},
		"unknown run":         {"createAttempt", http.MethodPost, attemptsPath(uuid.NewString()), attemptBody(step, uuid.NewString(), "gw-eu-1"), 404, api.CodeNotFound},
		"unknown attempt":     {"finalizeAttemptEligibility", http.MethodPost, eligibilityPath(uuid.NewString()), dispositionBody("dispatched"), 404, api.CodeNotFound},
		"close unknown run":   {"closeRun", http.MethodPost, closurePath(uuid.NewString()), "", 404, api.CodeNotFound},
		"invalid output contract": {"createAttempt", http.MethodPost, attemptsPath(runID),
			strings.Replace(attemptBody(step, uuid.NewString(), "gw-eu-1"), "jcs-sha256-v1", "md5", 1), 400, api.CodeInvalidRequest},
	} {
		got := e.call(t, c.op, c.method, c.path, "refused-"+strings.ReplaceAll(name, " ", "-"), c.body)
		require.Equal(t, c.status, got.status, "%s: %s", name, got.body)
		require.Equal(t, c.code, problemCode(t, got), name)
	}
	require.Equal(t, before, e.counts(t), "refusals write nothing")

	// The Gateway rejects the slot before binding: not_dispatched is proven.
	a := decode[apigen.Attempt](t, created, http.StatusCreated)
	_, err = e.gw.Dispatch(t.Context(), gateway.DispatchRequest{Tenant: r.tenant, ManifestBody: []byte(a.ManifestBody),
		Decision: gateway.Decision{RejectReason: "no_capacity"}})
	require.NoError(t, err)
	el := e.call(t, "finalizeAttemptEligibility", http.MethodPost, eligibilityPath(attemptID), "el-1", dispositionBody("not_dispatched"))
	require.Equal(t, http.StatusCreated, el.status, string(el.body))
	require.Equal(t, el, e.call(t, "finalizeAttemptEligibility", http.MethodPost, eligibilityPath(attemptID), "el-1", dispositionBody("not_dispatched")))
	otherDisposition := e.call(t, "finalizeAttemptEligibility", http.MethodPost, eligibilityPath(attemptID), "el-2", dispositionBody("dispatched"))
	require.Equal(t, http.StatusConflict, otherDisposition.status, string(otherDisposition.body))
	require.Equal(t, api.CodeEligibilityConflict, problemCode(t, otherDisposition))

	closed := e.call(t, "closeRun", http.MethodPost, closurePath(runID), "close-1", "")
	require.Equal(t, http.StatusCreated, closed.status, string(closed.body))
	require.Equal(t, closed, e.call(t, "closeRun", http.MethodPost, closurePath(runID), "close-1", ""), "a replay answers the first closure")
	again := e.call(t, "closeRun", http.MethodPost, closurePath(runID), "close-2", "")
	require.Equal(t, http.StatusConflict, again.status)
	require.Equal(t, api.CodeRunClosed, problemCode(t, again))
	late := e.call(t, "createAttempt", http.MethodPost, attemptsPath(runID), "attempt-late", attemptBody(uuid.NewString(), uuid.NewString(), "gw-eu-1"))
	require.Equal(t, http.StatusConflict, late.status)
	require.Equal(t, api.CodeRunClosed, problemCode(t, late))
	n := e.counts(t)
	require.Equal(t, 1, n["execution.run_finalizations"])
	require.Equal(t, 1, n["execution.attempts"])
	// openRun, createAttempt ×2, finalize, closeRun.
	require.Equal(t, 5, n["execution.api_idempotency_keys"])
}

// EX-2 (issue 33): eight concurrent createAttempt calls with one key create
// exactly one attempt; every answer is the first response (201, a replay
// once the first committed) or 409 idempotency_key_in_progress.
func TestEX2ConcurrentCreateAttemptOneKey(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r := e.admit(t)
	e.open(t, r)
	body := attemptBody(uuid.NewString(), uuid.NewString(), "gw-eu-1")
	const n = 8
	tokens := make([]string, n)
	for i := range tokens {
		tokens[i] = e.token(t, api.Audience(api.OwnerExecution), "createAttempt")
	}
	replies := make([]reply, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			replies[i] = e.callWith(t, tokens[i], http.MethodPost, attemptsPath(r.res.RunID), "attempt-key", body)
		}()
	}
	close(start)
	wg.Wait()
	var created []reply
	for _, got := range replies {
		switch got.status {
		case http.StatusCreated:
			created = append(created, got)
		case http.StatusConflict:
			require.Equal(t, api.CodeIdempotencyInProgress, problemCode(t, got))
		default:
			t.Fatalf("unexpected answer %d %s", got.status, got.body)
		}
	}
	require.NotEmpty(t, created)
	for _, got := range created {
		require.Equal(t, created[0].body, got.body, "every 201 is the first response")
	}
	t.Logf("%d calls: %d answered 201, %d in progress", n, len(created), n-len(created))
	counts := e.counts(t)
	require.Equal(t, 1, counts["execution.attempts"], "one attempt for one key")
	require.Equal(t, 2, counts["execution.api_idempotency_keys"], "openRun's key and this one")
}

// Issue 33: Execution's operations take only tokens for Execution's
// audience (a core_api token is 401) and the operation's own scope (403);
// nothing is written.
func TestExecutionAPIAudienceAndScope(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r := e.admit(t)
	before := e.counts(t)
	coreAudience := e.callWith(t, e.token(t, api.AudienceCore, "openRun"), http.MethodPost, "/v1/execution/runs", "k-1", openBody(r.jws))
	require.Equal(t, http.StatusUnauthorized, coreAudience.status)
	require.Equal(t, api.CodeUnauthorized, problemCode(t, coreAudience))
	wrongScope := e.callWith(t, e.token(t, api.Audience(api.OwnerExecution), "closeRun"), http.MethodPost, "/v1/execution/runs", "k-2", openBody(r.jws))
	require.Equal(t, http.StatusForbidden, wrongScope.status)
	require.Equal(t, api.CodeForbidden, problemCode(t, wrongScope))
	read := e.callWith(t, e.token(t, api.AudienceCore, "getRunClosure"), http.MethodGet, closurePath(r.res.RunID), "", "")
	require.Equal(t, http.StatusUnauthorized, read.status)
	none := e.callWith(t, "", http.MethodGet, eligibilityPath(uuid.NewString()), "", "")
	require.Equal(t, http.StatusUnauthorized, none.status)
	require.Equal(t, before, e.counts(t), "nothing written")
}
