package gatewayapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/api"
	"github.com/oceanway/core/internal/api/apigen"
	"github.com/oceanway/core/internal/api/gatewayapi"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/gateway"
	gatewayschema "github.com/oceanway/core/internal/gateway/schema"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
	"github.com/oceanway/core/internal/release"
	"github.com/oceanway/core/internal/workload"
)

type env struct {
	admin  *pgxpool.Pool // the gateway database as the superuser: counts and held transactions
	srv    *httptest.Server
	signer *workload.Signer
	router routers.Router
}

// concurrentCalls is how many calls TestGW1ConcurrentDispatchOverTheAPIOneSlot
// runs at once; the API's pool has one connection more.
const concurrentCalls = 8

func setup(t *testing.T) *env {
	t.Helper()
	admin := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Gateway},
		Lines: []migrate.Line{outboxschema.Line(), gatewayschema.Line()}, MaxConns: 4}).Gateway()
	_, err := release.Bootstrap(t.Context(), admin, release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1, SourceRelease: "test"})
	require.NoError(t, err)
	role := rolePool(t, admin.Config().ConnString(), gatewayschema.RoleGateway, concurrentCalls+1)
	e := &env{admin: admin}
	priv, pub, err := workload.Generate()
	require.NoError(t, err)
	e.signer, err = workload.NewSigner(workload.SignerConfig{Workload: "platform.adapter", Key: priv})
	require.NoError(t, err)
	v, err := workload.NewVerifier(workload.VerifierConfig{Audience: api.Audience(api.OwnerGateway),
		Trusted: []workload.Trusted{{Workload: "platform.adapter", Key: pub}}})
	require.NoError(t, err)
	h, err := api.Handler(api.Config{Gateway: gatewayapi.Server{Pool: role},
		Served: map[api.Owner]api.Served{api.OwnerGateway: {Verifier: v, Keys: &api.KeyStore{Pool: role, Table: api.KeyTables[api.OwnerGateway]}}}})
	require.NoError(t, err)
	e.srv = httptest.NewServer(h)
	t.Cleanup(e.srv.Close)
	doc, err := api.LoadDocument()
	require.NoError(t, err)
	e.router, err = legacy.NewRouter(doc)
	require.NoError(t, err)
	return e
}

// rolePool is dbtest.RolePool with room for concurrentCalls sessions at
// once: the gateway database as oceanway_gateway, as the API runs.
func rolePool(t *testing.T, dsn, role string, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	require.NoError(t, err)
	cfg.MaxConns = maxConns
	cfg.ConnConfig.RuntimeParams["search_path"] = "pg_catalog"
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "SET ROLE "+pgx.Identifier{role}.Sanitize())
		return err
	}
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

type reply struct {
	status int
	ctype  string
	body   []byte
}

type sent struct {
	method, path string
	reply
	header http.Header
}

// send sends one request (safe from any goroutine); check validates its
// answer against the document.
func (e *env) send(ctx context.Context, method, path, token, key, body string) (sent, error) {
	req, err := http.NewRequestWithContext(ctx, method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		return sent{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return sent{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return sent{}, err
	}
	return sent{method: method, path: path, header: resp.Header,
		reply: reply{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), body: raw}}, nil
}

// call sends one request and validates the answer against the document
// (every documented response: status, content type and body schema).
func (e *env) call(t *testing.T, method, path, token, key, body string) reply {
	t.Helper()
	s, err := e.send(t.Context(), method, path, token, key, body)
	require.NoError(t, err)
	e.requireDocumented(t, s)
	return s.reply
}

// requireDocumented validates a response against the document.
func (e *env) requireDocumented(t *testing.T, s sent) {
	t.Helper()
	vreq, err := http.NewRequest(s.method, "http://api"+s.path, nil)
	require.NoError(t, err)
	route, params, err := e.router.FindRoute(vreq)
	require.NoError(t, err, "%s %s is a documented operation", s.method, s.path)
	err = openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route},
		Status:                 s.status, Header: s.header, Body: io.NopCloser(bytes.NewReader(s.body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true},
	})
	require.NoError(t, err, "%s %s answered %d %s", s.method, s.path, s.status, s.body)
}

func (e *env) token(t *testing.T, op string) string {
	t.Helper()
	tok, err := e.signer.Sign(api.Audience(api.OwnerGateway), api.Scope(op))
	require.NoError(t, err)
	return tok
}

func (e *env) dispatch(t *testing.T, key, body string) reply {
	t.Helper()
	return e.call(t, http.MethodPost, "/v1/gateway/dispatch-slots", e.token(t, "dispatchAttempt"), key, body)
}

func observationPath(attemptID string) string {
	return "/v1/gateway/attempts/" + attemptID + "/observations"
}

func (e *env) observe(t *testing.T, attemptID, key, body string) reply {
	t.Helper()
	return e.call(t, http.MethodPost, observationPath(attemptID), e.token(t, "reportProviderObservation"), key, body)
}

func (e *env) count(t *testing.T, table string) int {
	t.Helper()
	var n int
	require.NoError(t, e.admin.QueryRow(t.Context(), "SELECT count(*) FROM "+table).Scan(&n))
	return n
}

// tables are every table a Gateway operation writes.
var tables = []string{"gateway.dispatch_slots", "gateway.route_snapshots", "gateway.attempt_route_bindings", "gateway.pre_binding_rejections",
	"gateway.provider_evidence", "gateway.availability_snapshots", "gateway.availability_currents", "gateway.api_idempotency_keys",
	"outbox.outbox_events", "outbox.outbox_deliveries"}

func (e *env) counts(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, tbl := range tables {
		out[tbl] = e.count(t, tbl)
	}
	return out
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

// manifest seals an AttemptExecutionManifest@1 as Execution's createAttempt
// returns it (manifestBody: its canonical JSON).
func manifest(t *testing.T) (*contract.AttemptExecutionManifest, string) {
	t.Helper()
	id := uuid.NewString()
	m := &contract.AttemptExecutionManifest{
		Manifest: strict.Quadruple{Ref: "aem-" + id}, RunID: uuid.NewString(), RunStepID: uuid.NewString(), ExecutionAttemptID: id,
		RunAdmissionManifest: strict.Quadruple{Ref: "ram-x", SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1,
			Digest: "4444444444444444444444444444444444444444444444444444444444444444"},
		ModelDeploymentID: "model-deploy/text-large", GatewayDeploymentID: "gw-eu-1", RoutingPolicyRevision: 2,
		OutputContract: strict.Quadruple{Ref: "output-contract/text@1", SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1,
			Digest: "5555555555555555555555555555555555555555555555555555555555555555"},
		ChargeDimensionRegistryVersion: "oceanway-charge-dimension-registry@1",
		ChargeDimensionKeys:            []string{"text.input_tokens", "text.output_tokens"},
		CreatedAt:                      time.Now().UTC().Truncate(time.Microsecond),
	}
	body, err := contract.Seal(m)
	require.NoError(t, err)
	return m, string(body)
}

var (
	organization = uuid.New()
	workspace    = uuid.New()
)

func route(channel string) *apigen.Route {
	return &apigen.Route{ChannelId: channel, SupplyId: "supply/sim-1", CredentialVersion: 3, ProviderModel: "sim/text-large", AdapterId: "adapter/simulated"}
}

func dispatchBody(t *testing.T, manifestBody string, r *apigen.Route, reject string) string {
	t.Helper()
	req := apigen.DispatchRequest{OrganizationId: organization, WorkspaceId: workspace, AttemptManifestBody: manifestBody, Route: r}
	if reject != "" {
		req.RejectReason = &reject
	}
	b, err := json.Marshal(req)
	require.NoError(t, err)
	return string(b)
}

func slotOf(t *testing.T, r reply) apigen.DispatchSlot {
	t.Helper()
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	var s apigen.DispatchSlot
	require.NoError(t, json.Unmarshal(r.body, &s))
	return s
}

func slotRead(m *contract.AttemptExecutionManifest) gatewayread.DispatchSlotRead {
	return gatewayread.DispatchSlotRead{ContractVersion: gatewayread.ReadDispatchSlotV1, Audience: gatewayread.AudienceExecutionEligibility,
		ExecutionAttemptID: m.ExecutionAttemptID, GatewayDeploymentID: m.GatewayDeploymentID, AttemptManifest: m.Manifest}
}

func quad(q strict.Quadruple) apigen.Quadruple {
	return apigen.Quadruple{Ref: q.Ref, SchemaVersion: q.SchemaVersion, DigestAlgorithmVersion: string(q.DigestAlgorithmVersion), Digest: q.Digest}
}

// replyQuad reads a quadruple out of a slot's canonical reply body.
func replyQuad(t *testing.T, body, prefix string) apigen.Quadruple {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &m))
	f := strict.Fields(prefix)
	s := func(k string) string { v, _ := m[k].(string); return v }
	return apigen.Quadruple{Ref: s(f[0]), SchemaVersion: s(f[1]), DigestAlgorithmVersion: s(f[2]), Digest: s(f[3])}
}

// GW-1 through the API (issue 33): dispatchAttempt with a route binds the
// attempt's slot (201 bound, the binding and route snapshot quadruples, the
// canonical reply); a dispatch with a new key — even with another decision —
// answers the stored terminal reply; the same key replays the first response
// byte for byte; the same key with another body is 422.
func TestGW1DispatchOverTheAPIBindsAndAnswersOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	m, body := manifest(t)
	req := dispatchBody(t, body, route("channel/eu"), "")
	first := e.dispatch(t, "bind-1", req)
	s := slotOf(t, first)
	require.Equal(t, apigen.Bound, s.State)
	require.Equal(t, m.ExecutionAttemptID, s.ExecutionAttemptId.String())
	require.Equal(t, m.GatewayDeploymentID, s.GatewayDeploymentId)
	require.NotNil(t, s.Binding)
	require.NotNil(t, s.RouteSnapshot)
	require.Nil(t, s.Rejection)
	require.Nil(t, s.RejectionReasonCode)

	// The reply is the slot's canonical body, naming the same objects.
	require.Equal(t, *s.Binding, replyQuad(t, s.ReplyBody, contract.PrefixAttemptRouteBinding))
	require.Equal(t, *s.RouteSnapshot, replyQuad(t, s.ReplyBody, contract.PrefixGatewayRouteSnapshot))
	require.Equal(t, quad(m.Manifest), replyQuad(t, s.ReplyBody, contract.PrefixAttemptExecutionManifest))
	ans, err := gateway.ReadDispatchSlot(t.Context(), e.admin, slotRead(m))
	require.NoError(t, err)
	require.Equal(t, ownerread.Found, ans.Answer)
	require.Equal(t, gatewayread.SlotBound, ans.Value.State)
	require.Equal(t, *s.Binding, quad(ans.Value.Binding))
	require.Equal(t, *s.RouteSnapshot, quad(ans.Value.RouteSnapshot))

	// Another key, another decision: the slot answers its stored reply.
	again := e.dispatch(t, "bind-2", dispatchBody(t, body, nil, "no_capacity"))
	require.Equal(t, first.body, again.body, "a terminal slot answers its stored reply")
	// The first response was lost: the same key and body replay it.
	replay := e.dispatch(t, "bind-1", req)
	require.Equal(t, first, replay, "the first response, byte for byte")
	// The same key with another body is refused.
	reused := e.dispatch(t, "bind-1", dispatchBody(t, body, route("channel/us"), ""))
	require.Equal(t, http.StatusUnprocessableEntity, reused.status)
	require.Equal(t, api.CodeIdempotencyKeyReused, problemCode(t, reused))

	require.Equal(t, 1, e.count(t, "gateway.dispatch_slots"))
	require.Equal(t, 1, e.count(t, "gateway.attempt_route_bindings"))
	require.Equal(t, 0, e.count(t, "gateway.pre_binding_rejections"))
	require.Equal(t, 2, e.count(t, "gateway.api_idempotency_keys"), "bind-1 and bind-2")
}

// GW-1 through the API: dispatchAttempt with a rejectReason rejects the
// slot before binding (terminal_rejected with the
// GatewayPreBindingRejectionFact@1 quadruple and its reason); a later
// dispatch with a route answers the stored rejection.
func TestGW1DispatchOverTheAPIRejectsBeforeBinding(t *testing.T) {
	t.Parallel()
	e := setup(t)
	m, body := manifest(t)
	r := e.dispatch(t, "reject-1", dispatchBody(t, body, nil, "policy_denied"))
	s := slotOf(t, r)
	require.Equal(t, apigen.TerminalRejected, s.State)
	require.NotNil(t, s.Rejection)
	require.Equal(t, "policy_denied", *s.RejectionReasonCode)
	require.Nil(t, s.Binding)
	require.Nil(t, s.RouteSnapshot)
	require.Equal(t, *s.Rejection, replyQuad(t, s.ReplyBody, contract.PrefixGatewayPreBindingRejectionFact))
	ans, err := gateway.ReadDispatchSlot(t.Context(), e.admin, slotRead(m))
	require.NoError(t, err)
	require.Equal(t, gatewayread.SlotTerminalRejected, ans.Value.State)
	require.Equal(t, *s.Rejection, quad(ans.Value.Rejection))
	f, err := contract.DecodeGatewayPreBindingRejectionFact(ans.Value.RejectionBody)
	require.NoError(t, err)
	require.Equal(t, "policy_denied", f.ReasonCode)

	later := e.dispatch(t, "reject-2", dispatchBody(t, body, route("channel/eu"), ""))
	require.Equal(t, r.body, later.body, "rejected is absorbing")
	require.Equal(t, 0, e.count(t, "gateway.attempt_route_bindings"))
}

// GW-1 through the API, bad input: both a route and a rejectReason, or
// neither; a manifest body that is not JSON, not a manifest, or whose
// content no longer matches its digest; a reason or a field outside the
// document: each is 400 invalid_request with nothing written (no slot, no
// stored response). The attempt's slot under another manifest is 409
// dispatch_slot_conflict, again with nothing written.
func TestGW1DispatchOverTheAPIRefusesBadInputWritingNothing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	m, body := manifest(t)
	tampered := strings.Replace(body, `"routingPolicyRevision":2`, `"routingPolicyRevision":3`, 1)
	require.NotEqual(t, body, tampered)
	good := dispatchBody(t, body, route("channel/eu"), "")
	before := e.counts(t)
	for name, req := range map[string]string{
		"route and rejectReason": dispatchBody(t, body, route("channel/eu"), "no_capacity"),
		"neither":                dispatchBody(t, body, nil, ""),
		"garbage manifest":       dispatchBody(t, "not a manifest", route("channel/eu"), ""),
		"empty object manifest":  dispatchBody(t, "{}", route("channel/eu"), ""),
		"tampered manifest":      dispatchBody(t, tampered, route("channel/eu"), ""),
		"truncated manifest":     dispatchBody(t, body[:len(body)/2], route("channel/eu"), ""),
		"reason outside pattern": dispatchBody(t, body, nil, "No Capacity"),
		"unknown field":          strings.Replace(good, `{`, `{"priority":1,`, 1),
		"zero credential":        strings.Replace(good, `"credentialVersion":3`, `"credentialVersion":0`, 1),
		"route too sparse":       strings.Replace(good, `"adapterId":"adapter/simulated",`, ``, 1),
	} {
		r := e.dispatch(t, "bad-"+strings.ReplaceAll(name, " ", "-"), req)
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", name, r.body)
		require.Equal(t, api.CodeInvalidRequest, problemCode(t, r), name)
	}
	require.Equal(t, before, e.counts(t), "nothing written")

	// The slot exists; the same attempt under another manifest conflicts.
	slotOf(t, e.dispatch(t, "ok-1", good))
	before = e.counts(t)
	other := *m
	other.Manifest = strict.Quadruple{Ref: "aem-other-" + m.ExecutionAttemptID}
	other.GatewayDeploymentID = "gw-us-1"
	otherBody, err := contract.Seal(&other)
	require.NoError(t, err)
	conflict := e.dispatch(t, "conflict-1", dispatchBody(t, string(otherBody), route("channel/eu"), ""))
	require.Equal(t, http.StatusConflict, conflict.status, string(conflict.body))
	require.Equal(t, api.CodeSlotConflict, problemCode(t, conflict))
	require.Equal(t, before, e.counts(t), "nothing written")
}

// GW-1 through the API, concurrently: eight calls dispatch one attempt at
// once, each with its own key and its own decision, on real concurrent
// sessions: exactly one slot and one terminal fact, and every answer is the
// one stored reply.
func TestGW1ConcurrentDispatchOverTheAPIOneSlot(t *testing.T) {
	t.Parallel()
	e := setup(t)
	_, body := manifest(t)
	results := make([]sent, concurrentCalls)
	errs := make([]error, concurrentCalls)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range concurrentCalls {
		tok := e.token(t, "dispatchAttempt")
		req := dispatchBody(t, body, route(fmt.Sprintf("channel/%d", i)), "")
		if i%2 == 1 {
			req = dispatchBody(t, body, nil, "no_capacity")
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], errs[i] = e.send(t.Context(), http.MethodPost, "/v1/gateway/dispatch-slots", tok, fmt.Sprintf("race-%d", i), req)
		}()
	}
	close(start)
	wg.Wait()
	var first apigen.DispatchSlot
	for i := range concurrentCalls {
		require.NoError(t, errs[i])
		e.requireDocumented(t, results[i])
		s := slotOf(t, results[i].reply)
		if i == 0 {
			first = s
			continue
		}
		require.Equal(t, first, s, "caller %d", i)
		require.Equal(t, string(results[0].body), string(results[i].body), "caller %d", i)
	}
	require.Equal(t, 1, e.count(t, "gateway.dispatch_slots"))
	require.Equal(t, 1, e.count(t, "gateway.attempt_route_bindings")+e.count(t, "gateway.pre_binding_rejections"), "one terminal fact")
	require.Equal(t, concurrentCalls, e.count(t, "gateway.api_idempotency_keys"), "every key stored its answer")
}

func observationBody(t *testing.T, o apigen.ObservationRequest) string {
	t.Helper()
	b, err := json.Marshal(o)
	require.NoError(t, err)
	return string(b)
}

func ptr(s string) *string { return &s }

func resultOf(t *testing.T, r reply) apigen.ObservationResult {
	t.Helper()
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	var out apigen.ObservationResult
	require.NoError(t, json.Unmarshal(r.body, &out))
	return out
}

// bound dispatches a new attempt with a route through the API.
func (e *env) bound(t *testing.T) *contract.AttemptExecutionManifest {
	t.Helper()
	m, body := manifest(t)
	require.Equal(t, apigen.Bound, slotOf(t, e.dispatch(t, "bind-"+m.ExecutionAttemptID, dispatchBody(t, body, route("channel/eu"), ""))).State)
	return m
}

// GW-2 through the API (issue 33): an available provider_usage report with
// its quantity and report id records ProviderEvidence@1 and the chain's
// first AvailabilitySnapshot@1 with its event (201, providerEvidence,
// eventId); the same report with a new key changes nothing (unchanged, no
// eventId, the current snapshot); the same key replays the first answer;
// a pending report advances the chain to state version 2.
func TestGW2ObservationOverTheAPI(t *testing.T) {
	t.Parallel()
	e := setup(t)
	m := e.bound(t)
	id := m.ExecutionAttemptID
	report := observationBody(t, apigen.ObservationRequest{EvidenceKind: "provider_usage", DimensionKey: "text.input_tokens",
		State: "available", Quantity: ptr("1200"), ReportId: ptr("rep-1")})
	first := e.observe(t, id, "obs-1", report)
	a := resultOf(t, first)
	require.False(t, a.Unchanged)
	require.NotNil(t, a.EventId)
	require.NotNil(t, a.ProviderEvidence)
	require.Equal(t, id, a.ExecutionAttemptId.String())
	require.Equal(t, "provider_usage", a.EvidenceKind)
	require.Equal(t, "text.input_tokens", a.DimensionKey)
	require.Equal(t, "available", a.State)
	snap, err := contract.DecodeAvailabilitySnapshot([]byte(a.SnapshotBody))
	require.NoError(t, err, "the snapshot body decodes and recomputes")
	require.Equal(t, a.AvailabilitySnapshot, quad(snap.Snapshot))
	require.Equal(t, *a.ProviderEvidence, quad(snap.Evidence))
	require.EqualValues(t, 1, snap.StateVersion)
	require.Equal(t, gatewayapi.AvailableReasonCode, snap.ReasonCode, "an available report without a reason records the default")
	var events int
	require.NoError(t, e.admin.QueryRow(t.Context(), `SELECT count(*) FROM outbox.outbox_events WHERE event_id = $1 AND event_type = $2`,
		a.EventId.String(), envelope.GatewayAvailabilityCurrentChangedV1).Scan(&events))
	require.Equal(t, 1, events, "the availability event is in the outbox")

	before := e.counts(t)
	same := resultOf(t, e.observe(t, id, "obs-2", report))
	require.True(t, same.Unchanged)
	require.Nil(t, same.EventId, "no event when unchanged")
	require.Equal(t, a.AvailabilitySnapshot, same.AvailabilitySnapshot)
	require.Equal(t, a.SnapshotBody, same.SnapshotBody)
	require.Equal(t, a.ProviderEvidence, same.ProviderEvidence)
	after := e.counts(t)
	require.Equal(t, before["gateway.api_idempotency_keys"]+1, after["gateway.api_idempotency_keys"])
	after["gateway.api_idempotency_keys"] = before["gateway.api_idempotency_keys"]
	require.Equal(t, before, after, "an unchanged report writes only its stored answer")

	require.Equal(t, first, e.observe(t, id, "obs-1", report), "the first response, byte for byte")

	pending := resultOf(t, e.observe(t, id, "obs-3", observationBody(t, apigen.ObservationRequest{EvidenceKind: "provider_usage",
		DimensionKey: "text.input_tokens", State: "pending", ReasonCode: ptr("provider_late")})))
	require.False(t, pending.Unchanged)
	require.NotNil(t, pending.EventId)
	require.Nil(t, pending.ProviderEvidence)
	next, err := contract.DecodeAvailabilitySnapshot([]byte(pending.SnapshotBody))
	require.NoError(t, err)
	require.EqualValues(t, 2, next.StateVersion)
	require.Equal(t, snap.Snapshot, next.Predecessor)
	require.Equal(t, "provider_late", next.ReasonCode)
}

// GW-2 through the API, refusals with nothing written: a report other than
// available needs its reasonCode and carries no quantity or reportId; an
// available report needs both; a quantity or dimension the contract does
// not take is 400; a report on an attempt whose slot is rejected is 409
// dispatch_slot_not_bound; on an attempt without a slot, 404.
func TestGW2ObservationOverTheAPIRefusals(t *testing.T) {
	t.Parallel()
	e := setup(t)
	m := e.bound(t)
	id := m.ExecutionAttemptID
	rm, rbody := manifest(t)
	require.Equal(t, apigen.TerminalRejected, slotOf(t, e.dispatch(t, "reject-1", dispatchBody(t, rbody, nil, "no_capacity"))).State)
	before := e.counts(t)

	obs := func(state string, reason, qty, report *string) string {
		return observationBody(t, apigen.ObservationRequest{EvidenceKind: "provider_usage", DimensionKey: "text.input_tokens",
			State: apigen.ObservationRequestState(state), ReasonCode: reason, Quantity: qty, ReportId: report})
	}
	for name, body := range map[string]string{
		"pending without reason":     obs("pending", nil, nil, nil),
		"unavailable without reason": obs("unavailable", nil, nil, nil),
		"pending with quantity":      obs("pending", ptr("provider_late"), ptr("3"), nil),
		"pending with report":        obs("pending", ptr("provider_late"), nil, ptr("rep-1")),
		"available without quantity": obs("available", nil, nil, ptr("rep-1")),
		"available without report":   obs("available", nil, ptr("3"), nil),
		"reason outside contract":    obs("unavailable", ptr("Provider Down"), nil, nil),
		"quantity not canonical":     obs("available", nil, ptr("1.50"), ptr("rep-1")),
		"dimension outside contract": strings.Replace(obs("available", nil, ptr("3"), ptr("rep-1")), "text.input_tokens", "Text Input", 1),
		"unknown state":              strings.Replace(obs("pending", ptr("provider_late"), nil, nil), `"pending"`, `"late"`, 1),
		"unknown field":              strings.Replace(obs("pending", ptr("provider_late"), nil, nil), `{`, `{"note":"x",`, 1),
	} {
		r := e.observe(t, id, "bad-"+strings.ReplaceAll(name, " ", "-"), body)
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", name, r.body)
		require.Equal(t, api.CodeInvalidRequest, problemCode(t, r), name)
	}
	good := obs("available", nil, ptr("3"), ptr("rep-1"))
	notBound := e.observe(t, rm.ExecutionAttemptID, "rejected-1", good)
	require.Equal(t, http.StatusConflict, notBound.status, string(notBound.body))
	require.Equal(t, api.CodeSlotNotBound, problemCode(t, notBound))
	unknown := e.observe(t, uuid.NewString(), "unknown-1", good)
	require.Equal(t, http.StatusNotFound, unknown.status, string(unknown.body))
	require.Equal(t, api.CodeNotFound, problemCode(t, unknown))
	require.Equal(t, before, e.counts(t), "nothing written")
}

// GW-2 through the API, a concurrent advance: while another transaction
// holds the chain's first snapshot uncommitted, a report of the same chain
// waits, then loses (ErrChainMoved): 503 unavailable with nothing committed
// and the key left free; the retry with the same key advances the chain the
// winner moved (state version 2).
func TestGW2ObservationOverTheAPIChainMovedIsRetried(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	m := e.bound(t)
	id := m.ExecutionAttemptID
	held, err := e.admin.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = held.Rollback(context.WithoutCancel(ctx)) }()
	_, err = gateway.New(held).Observe(ctx, id, gateway.Observation{EvidenceKind: contract.EvidenceProviderUsage, DimensionKey: "text.output_tokens",
		State: contract.AvailabilityAvailable, ReasonCode: "provider_reported", Quantity: "40", ReportID: "rep-held"})
	require.NoError(t, err)
	before := e.counts(t)

	body := observationBody(t, apigen.ObservationRequest{EvidenceKind: "provider_usage", DimensionKey: "text.output_tokens",
		State: "pending", ReasonCode: ptr("provider_late")})
	tok := e.token(t, "reportProviderObservation")
	type result struct {
		s   sent
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := e.send(ctx, http.MethodPost, observationPath(id), tok, "moved-1", body)
		done <- result{s, err}
	}()
	require.Eventually(t, func() bool {
		var n int
		_ = e.admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
		return n > 0
	}, 10*time.Second, 2*time.Millisecond, "the report waits on the held advance")
	require.NoError(t, held.Commit(ctx))
	lost := <-done
	require.NoError(t, lost.err)
	e.requireDocumented(t, lost.s)
	require.Equal(t, http.StatusServiceUnavailable, lost.s.status, string(lost.s.body))
	require.Equal(t, api.CodeUnavailable, problemCode(t, lost.s.reply))
	after := e.counts(t)
	for _, tbl := range []string{"gateway.provider_evidence", "gateway.availability_snapshots", "gateway.availability_currents", "outbox.outbox_events"} {
		require.Equal(t, before[tbl]+1, after[tbl], "%s: only the held advance committed", tbl)
	}
	require.Equal(t, before["gateway.api_idempotency_keys"], after["gateway.api_idempotency_keys"], "the key stays free")

	retry := resultOf(t, e.observe(t, id, "moved-1", body))
	require.False(t, retry.Unchanged)
	require.NotNil(t, retry.EventId)
	snap, err := contract.DecodeAvailabilitySnapshot([]byte(retry.SnapshotBody))
	require.NoError(t, err)
	require.EqualValues(t, 2, snap.StateVersion, "the retry advances the chain the winner moved")
}

// Issue 33: the Gateway's operations take only a token for audience
// gateway_api (a core_api token is 401) and the operation's own scope (a
// token for the other Gateway operation is 403); nothing is written.
func TestGatewayAPIRefusesAnotherAudienceOrScope(t *testing.T) {
	t.Parallel()
	e := setup(t)
	m := e.bound(t)
	_, body := manifest(t)
	before := e.counts(t)
	core, err := e.signer.Sign(api.AudienceCore, api.Scope("dispatchAttempt"))
	require.NoError(t, err)
	r := e.call(t, http.MethodPost, "/v1/gateway/dispatch-slots", core, "aud-1", dispatchBody(t, body, route("channel/eu"), ""))
	require.Equal(t, http.StatusUnauthorized, r.status)
	require.Equal(t, api.CodeUnauthorized, problemCode(t, r))
	r = e.call(t, http.MethodPost, "/v1/gateway/dispatch-slots", e.token(t, "reportProviderObservation"), "scope-1", dispatchBody(t, body, route("channel/eu"), ""))
	require.Equal(t, http.StatusForbidden, r.status)
	require.Equal(t, api.CodeForbidden, problemCode(t, r))

	obs := observationBody(t, apigen.ObservationRequest{EvidenceKind: "provider_usage", DimensionKey: "text.input_tokens", State: "available",
		Quantity: ptr("3"), ReportId: ptr("rep-1")})
	core, err = e.signer.Sign(api.AudienceCore, api.Scope("reportProviderObservation"))
	require.NoError(t, err)
	r = e.call(t, http.MethodPost, observationPath(m.ExecutionAttemptID), core, "aud-2", obs)
	require.Equal(t, http.StatusUnauthorized, r.status)
	r = e.call(t, http.MethodPost, observationPath(m.ExecutionAttemptID), e.token(t, "dispatchAttempt"), "scope-2", obs)
	require.Equal(t, http.StatusForbidden, r.status)
	require.Equal(t, api.CodeForbidden, problemCode(t, r))
	require.Equal(t, before, e.counts(t), "nothing written")
}
