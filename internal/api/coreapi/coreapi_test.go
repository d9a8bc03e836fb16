package coreapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/apiclient"
	"github.com/oceanway/core/contracts/execution"
	admissionschema "github.com/oceanway/core/internal/admission/schema"
	"github.com/oceanway/core/internal/api"
	"github.com/oceanway/core/internal/api/apigen"
	"github.com/oceanway/core/internal/api/coreapi"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/release"
	"github.com/oceanway/core/internal/runtoken"
	"github.com/oceanway/core/internal/workload"
)

type env struct {
	core    *pgxpool.Pool
	srv     *httptest.Server
	signer  *workload.Signer
	other   *workload.Signer // a trusted workload too
	router  routers.Router
	expired *workload.Signer
	tokens  *runtoken.Verifier // Core's token key
}

func setup(t *testing.T) *env {
	t.Helper()
	core := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core},
		Lines: []migrate.Line{outboxschema.Line(), admissionschema.Line(), billingschema.Line()}, MaxConns: 12}).Core()
	_, err := release.Bootstrap(t.Context(), core, release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1, SourceRelease: "test"})
	require.NoError(t, err)
	dsn := core.Config().ConnString()
	adm := dbtest.RolePool(t, dsn, admissionschema.RoleAdmission)
	bil := dbtest.RolePool(t, dsn, billingschema.RoleBilling)
	e := &env{core: core}
	var trusted []workload.Trusted
	for _, s := range []struct {
		who string
		dst **workload.Signer
		now func() time.Time
	}{{"platform.main", &e.signer, nil}, {"platform.other", &e.other, nil},
		{"platform.late", &e.expired, func() time.Time { return time.Now().Add(-10 * time.Minute) }}} {
		priv, pub, err := workload.Generate()
		require.NoError(t, err)
		*s.dst, err = workload.NewSigner(workload.SignerConfig{Workload: s.who, Key: priv, Now: s.now})
		require.NoError(t, err)
		trusted = append(trusted, workload.Trusted{Workload: s.who, Key: pub})
	}
	v, err := workload.NewVerifier(workload.VerifierConfig{Audience: api.AudienceCore, Trusted: trusted})
	require.NoError(t, err)
	tokenKey, tokenPub, err := workload.Generate()
	require.NoError(t, err)
	e.tokens, err = runtoken.NewVerifier(tokenPub)
	require.NoError(t, err)
	tokens, err := runtoken.NewSigner(tokenKey)
	require.NoError(t, err)
	h, err := api.Handler(api.Config{Core: coreapi.Server{Admission: adm, Billing: bil, Tokens: tokens},
		Served: map[api.Owner]api.Served{api.OwnerCore: {Verifier: v, Keys: &api.KeyStore{Pool: adm, Table: api.KeyTables[api.OwnerCore]}}}})
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
	r := reply{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), body: raw}
	e.requireDocumented(t, req, resp, raw)
	return r
}

// requireDocumented validates a response against the document.
func (e *env) requireDocumented(t *testing.T, req *http.Request, resp *http.Response, raw []byte) {
	t.Helper()
	vreq, err := http.NewRequest(req.Method, "http://api"+req.URL.Path, nil)
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

func (e *env) token(t *testing.T, s *workload.Signer, op string) string {
	t.Helper()
	tok, err := s.Sign(api.AudienceCore, api.Scope(op))
	require.NoError(t, err)
	return tok
}

func admitBody(account string, credits int) string {
	return `{"organizationId":"` + uuid.NewString() + `","workspaceId":"` + uuid.NewString() + `","billingAccountId":"` + account +
		`","reservedCredits":` + json.Number(strings.TrimSpace(strings.Repeat(" ", 0)+itoa(credits))).String() + `}`
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func (e *env) count(t *testing.T, table string) int {
	t.Helper()
	var n int
	require.NoError(t, e.core.QueryRow(t.Context(), "SELECT count(*) FROM "+table).Scan(&n))
	return n
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

// EX-1 through the API (issue 33): admitRun creates the run, its
// reservation and fence; getRun and getReservation read them back; every
// answer matches the document.
func TestAdmitRunThenReadIt(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r := e.call(t, http.MethodPost, "/v1/runs", e.token(t, e.signer, "admitRun"), "key-1", admitBody(uuid.NewString(), 250))
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	var run apigen.Run
	require.NoError(t, json.Unmarshal(r.body, &run))
	require.EqualValues(t, 250, run.ReservedCredits)

	got := e.call(t, http.MethodGet, "/v1/runs/"+run.RunId.String(), e.token(t, e.signer, "getRun"), "", "")
	require.Equal(t, http.StatusOK, got.status, string(got.body))
	var again apigen.Run
	require.NoError(t, json.Unmarshal(got.body, &again))
	require.Equal(t, run, again)

	res := e.call(t, http.MethodGet, "/v1/reservations/"+run.BillingReservationId.String(), e.token(t, e.signer, "getReservation"), "", "")
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	var rv apigen.Reservation
	require.NoError(t, json.Unmarshal(res.body, &rv))
	require.Equal(t, apigen.Reserved, rv.State)
	require.Equal(t, run.FenceId, rv.Fence.FenceId)
	require.Equal(t, run.RunId, rv.RunId)

	missing := e.call(t, http.MethodGet, "/v1/runs/"+uuid.NewString(), e.token(t, e.signer, "getRun"), "", "")
	require.Equal(t, http.StatusNotFound, missing.status)
	require.Equal(t, api.CodeNotFound, problemCode(t, missing))
}

// Issue 33, Idempotency-Key: the same key and body return the first
// response byte for byte (after its response was lost, the retry is the
// same call) and admit one run; the same key with another body is 422; the
// same key from another caller is another key; nothing is written by a
// refused call.
func TestAdmitRunIdempotencyKey(t *testing.T) {
	t.Parallel()
	e := setup(t)
	body := admitBody(uuid.NewString(), 300)
	first := e.call(t, http.MethodPost, "/v1/runs", e.token(t, e.signer, "admitRun"), "key-A", body)
	require.Equal(t, http.StatusCreated, first.status, string(first.body))
	// The first response is lost; the platform retries with the same key
	// and the same body, written differently (key order, whitespace).
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &m))
	reordered, err := json.MarshalIndent(m, "", "   ")
	require.NoError(t, err)
	for range 2 {
		replay := e.call(t, http.MethodPost, "/v1/runs", e.token(t, e.signer, "admitRun"), "key-A", string(reordered))
		require.Equal(t, first, replay, "the first response, byte for byte")
	}
	require.Equal(t, 1, e.count(t, "admission.runs"))

	other := e.call(t, http.MethodPost, "/v1/runs", e.token(t, e.signer, "admitRun"), "key-A", admitBody(uuid.NewString(), 300))
	require.Equal(t, http.StatusUnprocessableEntity, other.status)
	require.Equal(t, api.CodeIdempotencyKeyReused, problemCode(t, other))
	require.Equal(t, 1, e.count(t, "admission.runs"), "nothing written")

	// Another caller's key-A is its own key.
	theirs := e.call(t, http.MethodPost, "/v1/runs", e.token(t, e.other, "admitRun"), "key-A", body)
	require.Equal(t, http.StatusCreated, theirs.status)
	require.NotEqual(t, first.body, theirs.body)
	require.Equal(t, 2, e.count(t, "admission.runs"))
	require.Equal(t, 2, e.count(t, "admission.api_idempotency_keys"))
}

// Issue 33: a retry while the first call with the key still runs is 409
// (the first holds the key's lock for its whole transaction); and many
// concurrent calls with one key admit exactly one run, every answer being
// either the one first response or a 409.
func TestAdmitRunConcurrentSameKey(t *testing.T) {
	t.Parallel()
	e := setup(t)
	body := admitBody(uuid.NewString(), 120)
	// A first call in flight: hold the key's lock as its transaction would.
	conn, err := e.core.Acquire(t.Context())
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(t.Context(), `SELECT pg_advisory_lock(hashtextextended($1, 0))`, "platform.main admitRun key-C")
	require.NoError(t, err)
	busy := e.call(t, http.MethodPost, "/v1/runs", e.token(t, e.signer, "admitRun"), "key-C", body)
	require.Equal(t, http.StatusConflict, busy.status)
	require.Equal(t, api.CodeIdempotencyInProgress, problemCode(t, busy))
	_, err = conn.Exec(t.Context(), `SELECT pg_advisory_unlock(hashtextextended($1, 0))`, "platform.main admitRun key-C")
	require.NoError(t, err)
	require.Equal(t, 0, e.count(t, "admission.runs"))

	const n = 8
	replies := make([]reply, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		tok := e.token(t, e.signer, "admitRun")
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			replies[i] = e.call(t, http.MethodPost, "/v1/runs", tok, "key-D", body)
		}()
	}
	close(start)
	wg.Wait()
	var created []reply
	for _, r := range replies {
		switch r.status {
		case http.StatusCreated:
			created = append(created, r)
		case http.StatusConflict:
			require.Equal(t, api.CodeIdempotencyInProgress, problemCode(t, r))
		default:
			t.Fatalf("unexpected answer %d %s", r.status, r.body)
		}
	}
	require.NotEmpty(t, created)
	for _, r := range created {
		require.Equal(t, created[0].body, r.body, "every 201 is the first response")
	}
	require.Equal(t, 1, e.count(t, "admission.runs"), "one run for one key")
}

// Issue 33, strict decoding and problem+json: a missing Idempotency-Key, an
// unknown field, a wrong type or a missing field is 400 with nothing
// written; a missing or expired token is 401, a token for another operation
// 403; an unknown path 404; each a problem with a stable type.
func TestAdmitRunRefusals(t *testing.T) {
	t.Parallel()
	e := setup(t)
	account := uuid.NewString()
	good := admitBody(account, 10)
	tok := func() string { return e.token(t, e.signer, "admitRun") }
	for name, c := range map[string]struct {
		token, key, body string
		status           int
		code             string
	}{
		"no key":         {tok(), "", good, 400, api.CodeInvalidRequest},
		"key with space": {tok(), "a b", good, 400, api.CodeInvalidRequest},
		"unknown field":  {tok(), "k1", strings.Replace(good, `{`, `{"latest":true,`, 1), 400, api.CodeInvalidRequest},
		"wrong type":     {tok(), "k2", strings.Replace(good, `"reservedCredits":10`, `"reservedCredits":"10"`, 1), 400, api.CodeInvalidRequest},
		"zero credits":   {tok(), "k3", strings.Replace(good, `"reservedCredits":10`, `"reservedCredits":0`, 1), 400, api.CodeInvalidRequest},
		"not a uuid":     {tok(), "k4", strings.Replace(good, account, "acct-1", 1), 400, api.CodeInvalidRequest},
		"missing field":  {tok(), "k5", `{"organizationId":"` + uuid.NewString() + `"}`, 400, api.CodeInvalidRequest},
		"no token":       {"", "k6", good, 401, api.CodeUnauthorized},
		"expired token":  {e.token(t, e.expired, "admitRun"), "k7", good, 401, api.CodeUnauthorized},
		"wrong scope":    {e.token(t, e.signer, "getRun"), "k8", good, 403, api.CodeForbidden},
	} {
		r := e.call(t, http.MethodPost, "/v1/runs", c.token, c.key, c.body)
		require.Equal(t, c.status, r.status, "%s: %s", name, r.body)
		require.Equal(t, c.code, problemCode(t, r), name)
	}
	require.Equal(t, 0, e.count(t, "admission.runs"), "nothing written")
	require.Equal(t, 0, e.count(t, "admission.api_idempotency_keys"))
	require.Equal(t, 0, e.count(t, "outbox.outbox_events"))
	nowhere := e.call(t, http.MethodGet, "/v1/everything", tok(), "", "")
	require.Equal(t, http.StatusNotFound, nowhere.status)
	require.Equal(t, api.CodeNotFound, problemCode(t, nowhere))
}

// GET /openapi.json is the document (OpenAPI 3.1, with the operation ids);
// /docs renders it.
func TestDocumentIsServed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	resp, err := http.Get(e.srv.URL + "/openapi.json")
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	var doc struct {
		OpenAPI string                               `json:"openapi"`
		Paths   map[string]map[string]map[string]any `json:"paths"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
	require.Equal(t, "3.1.0", doc.OpenAPI)
	ids := map[string]bool{}
	for _, item := range doc.Paths {
		for _, op := range item {
			ids[op["operationId"].(string)] = true
		}
	}
	require.Equal(t, map[string]bool{"admitRun": true, "getRun": true, "getReservation": true, "issueRunExecutionToken": true, "recordCanaryProof": true,
		"openRun": true, "createAttempt": true, "finalizeAttemptEligibility": true, "getAttemptEligibility": true, "closeRun": true, "getRunClosure": true,
		"dispatchAttempt": true, "reportProviderObservation": true, "getReservationSettlementInputs": true,
		"listCases": true, "getCase": true, "requestCaseResolution": true, "approveCaseResolution": true, "applyCaseResolution": true}, ids)
	page, err := http.Get(e.srv.URL + "/docs")
	require.NoError(t, err)
	defer func() { _ = page.Body.Close() }()
	html, err := io.ReadAll(page.Body)
	require.NoError(t, err)
	require.Contains(t, string(html), "admitRun")
	require.Contains(t, string(html), "Idempotency-Key")
}

// Issue 33: the generated Go client (package apiclient, outside internal/)
// drives the API: admit with a token and an Idempotency-Key, a replay with
// the same key gets the first body, and the reservation reads back.
func TestGeneratedClient(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	bearer := func(op string) apiclient.RequestEditorFn {
		return func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+e.token(t, e.signer, op))
			return nil
		}
	}
	c, err := apiclient.NewClientWithResponses(e.srv.URL)
	require.NoError(t, err)
	body := apiclient.AdmitRunJSONRequestBody{OrganizationId: uuid.New(), WorkspaceId: uuid.New(), BillingAccountId: uuid.New(), ReservedCredits: 42}
	first, err := c.AdmitRunWithResponse(ctx, &apiclient.AdmitRunParams{IdempotencyKey: "client-1"}, body, bearer("admitRun"))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, first.StatusCode(), string(first.Body))
	require.EqualValues(t, 42, first.JSON201.ReservedCredits)
	again, err := c.AdmitRunWithResponse(ctx, &apiclient.AdmitRunParams{IdempotencyKey: "client-1"}, body, bearer("admitRun"))
	require.NoError(t, err)
	require.Equal(t, first.Body, again.Body)
	res, err := c.GetReservationWithResponse(ctx, first.JSON201.BillingReservationId, bearer("getReservation"))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode())
	require.Equal(t, apiclient.Reserved, res.JSON200.State)
	missing, err := c.GetRunWithResponse(ctx, uuid.New(), bearer("getRun"))
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, missing.StatusCode())
	require.Equal(t, api.CodeNotFound, missing.ApplicationproblemJSON404.Code)
}

// EX-2 through the API (issue 33): issueRunExecutionToken returns the
// run's one token, signed by Core's token key: two calls with different
// keys (or callers) get the same token and signature; the JWS verifies
// only under Core's key and its payload is the strict RunExecutionToken@1
// of the admitted run; an unknown run is 404 with nothing stored; Core's
// operations are refused to another owner's audience.
func TestIssueRunExecutionTokenIsCoresOneSignedToken(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r := e.call(t, http.MethodPost, "/v1/runs", e.token(t, e.signer, "admitRun"), "key-1", admitBody(uuid.NewString(), 300))
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	var run apigen.Run
	require.NoError(t, json.Unmarshal(r.body, &run))

	path := "/v1/runs/" + run.RunId.String() + "/execution-token"
	first := e.call(t, http.MethodPost, path, e.token(t, e.signer, "issueRunExecutionToken"), "tok-1", "")
	require.Equal(t, http.StatusCreated, first.status, string(first.body))
	second := e.call(t, http.MethodPost, path, e.token(t, e.other, "issueRunExecutionToken"), "tok-2", "")
	require.Equal(t, http.StatusCreated, second.status, string(second.body))
	var a, b apigen.ExecutionToken
	require.NoError(t, json.Unmarshal(first.body, &a))
	require.NoError(t, json.Unmarshal(second.body, &b))
	require.Equal(t, a, b, "one token per run, whoever asks")

	payload, err := e.tokens.Verify(a.Token)
	require.NoError(t, err)
	require.Equal(t, a.TokenBody, string(payload), "the JWS signs the token's canonical bytes")
	tok, err := execution.DecodeRunExecutionToken(payload)
	require.NoError(t, err)
	require.Equal(t, run.RunId.String(), tok.RunID)
	require.Equal(t, run.BillingReservationId.String(), tok.BillingReservationID)
	require.Equal(t, run.Manifest.Digest, tok.Manifest.Digest)
	require.Equal(t, a.RunExecutionToken.Digest, tok.Token.Digest)

	before := e.count(t, "admission.api_idempotency_keys")
	missing := e.call(t, http.MethodPost, "/v1/runs/"+uuid.NewString()+"/execution-token", e.token(t, e.signer, "issueRunExecutionToken"), "tok-3", "")
	require.Equal(t, http.StatusNotFound, missing.status)
	require.Equal(t, api.CodeNotFound, problemCode(t, missing))
	require.Equal(t, before, e.count(t, "admission.api_idempotency_keys"), "a refusal stores nothing")

	wrongAudience, err := e.signer.Sign(api.Audience(api.OwnerExecution), api.Scope("issueRunExecutionToken"))
	require.NoError(t, err)
	refused := e.call(t, http.MethodPost, path, wrongAudience, "tok-4", "")
	require.Equal(t, http.StatusUnauthorized, refused.status)
}

// Issue 33: a process serves only its owners' operations; another owner's
// operation is 404 operation_not_served_here before any token is checked.
func TestAnotherOwnersOperationIsNotServedHere(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r := e.call(t, http.MethodPost, "/v1/execution/runs", "", "k-1", `{"token":"x"}`)
	require.Equal(t, http.StatusNotFound, r.status)
	require.Equal(t, api.CodeNotServedHere, problemCode(t, r))
	g := e.call(t, http.MethodGet, "/v1/execution/attempts/"+uuid.NewString()+"/eligibility", "", "", "")
	require.Equal(t, api.CodeNotServedHere, problemCode(t, g))
}

// Issue 33: authentication comes before validation: a request without a
// valid token learns nothing of the document's rules (401, not 400), and
// writes nothing.
func TestUnauthenticatedRequestIsRefusedBeforeValidation(t *testing.T) {
	t.Parallel()
	e := setup(t)
	before := e.count(t, "admission.runs")
	for _, body := range []string{`{"unknown":1}`, `not json`, admitBody(uuid.NewString(), 0)} {
		r := e.call(t, http.MethodPost, "/v1/runs", "", "k-1", body)
		require.Equal(t, http.StatusUnauthorized, r.status, body)
		require.Equal(t, api.CodeUnauthorized, problemCode(t, r))
	}
	require.Equal(t, before, e.count(t, "admission.runs"))
}
