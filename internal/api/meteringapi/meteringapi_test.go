package meteringapi_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/api"
	"github.com/oceanway/core/internal/api/apigen"
	"github.com/oceanway/core/internal/api/meteringapi"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/metering"
	meteringschema "github.com/oceanway/core/internal/metering/schema"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/coreread"
	"github.com/oceanway/core/internal/ownerread/executionread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
	"github.com/oceanway/core/internal/release"
	"github.com/oceanway/core/internal/workload"
)

const (
	dimIn      = "text.input_tokens"
	dimOut     = "text.output_tokens"
	deployment = "gw-deploy-1"
	operation  = "getReservationSettlementInputs"
)

var occurred = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

type env struct {
	admin  *pgxpool.Pool // the metering database as the superuser: Metering's worker and counts
	srv    *httptest.Server
	signer *workload.Signer
	router routers.Router
	owners *owners
	inputs *metering.Consumer
	worker *metering.Processor
}

func setup(t *testing.T) *env {
	t.Helper()
	admin := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Metering},
		Lines: []migrate.Line{outboxschema.Line(), meteringschema.Line()}, MaxConns: 3}).Metering()
	// The worker appends metering.settlement-input.current-changed@1 with
	// its delivery: the metering outbox needs its release.
	_, err := release.Bootstrap(t.Context(), admin, release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1, SourceRelease: "test"})
	require.NoError(t, err)
	e := &env{admin: admin, owners: newOwners()}
	e.inputs, err = metering.New(admin, metering.Config{Inbox: inbox.Config{LockTimeout: time.Second}, Reads: e.owners})
	require.NoError(t, err)
	e.worker, err = metering.NewProcessor(admin, metering.ProcessorConfig{Reads: e.owners})
	require.NoError(t, err)

	// The API reads the metering database as oceanway_metering, as serve runs it.
	role := dbtest.RolePool(t, admin.Config().ConnString(), meteringschema.RoleMetering)
	priv, pub, err := workload.Generate()
	require.NoError(t, err)
	e.signer, err = workload.NewSigner(workload.SignerConfig{Workload: "platform.billing", Key: priv})
	require.NoError(t, err)
	v, err := workload.NewVerifier(workload.VerifierConfig{Audience: api.Audience(api.OwnerMetering),
		Trusted: []workload.Trusted{{Workload: "platform.billing", Key: pub}}})
	require.NoError(t, err)
	h, err := api.Handler(api.Config{Metering: meteringapi.Server{Pool: role},
		Served: map[api.Owner]api.Served{api.OwnerMetering: {Verifier: v}}})
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
func (e *env) call(t *testing.T, path, token string) reply {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, e.srv.URL+path, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)

	vreq, err := http.NewRequest(http.MethodGet, "http://api"+path, nil)
	require.NoError(t, err)
	rt, params, err := e.router.FindRoute(vreq)
	require.NoError(t, err, "GET %s is a documented operation", path)
	err = openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: rt},
		Status:                 resp.StatusCode, Header: resp.Header, Body: io.NopCloser(bytes.NewReader(raw)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true},
	})
	require.NoError(t, err, "GET %s answered %d %s", path, resp.StatusCode, raw)
	return reply{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), body: raw}
}

func (e *env) token(t *testing.T, audience, op string) string {
	t.Helper()
	tok, err := e.signer.Sign(audience, api.Scope(op))
	require.NoError(t, err)
	return tok
}

func inputsPath(reservationID string) string {
	return "/v1/metering/reservations/" + reservationID + "/settlement-inputs"
}

// settlementInputs reads a reservation's inputs through the API (200).
func (e *env) settlementInputs(t *testing.T, reservationID string) apigen.ReservationSettlementInputs {
	t.Helper()
	r := e.call(t, inputsPath(reservationID), e.token(t, api.Audience(api.OwnerMetering), operation))
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var out apigen.ReservationSettlementInputs
	require.NoError(t, json.Unmarshal(r.body, &out))
	require.Equal(t, reservationID, out.BillingReservationId.String())
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

func (e *env) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, e.admin.QueryRow(t.Context(), sql, args...).Scan(&n))
	return n
}

// metered counts every Metering fact and pointer (a read writes none).
func (e *env) metered(t *testing.T) int {
	t.Helper()
	return e.count(t, `SELECT (SELECT count(*) FROM metering.settlement_input_snapshots) + (SELECT count(*) FROM metering.settlement_input_current)
		+ (SELECT count(*) FROM metering.meter_events) + (SELECT count(*) FROM metering.eligibility_decisions)
		+ (SELECT count(*) FROM outbox.outbox_events)`)
}

func quad(ref string) strict.Quadruple {
	h := sha256.Sum256([]byte(ref))
	return strict.Quadruple{Ref: ref, SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: hex.EncodeToString(h[:])}
}

func apiQuad(q strict.Quadruple) apigen.Quadruple {
	return apigen.Quadruple{Ref: q.Ref, SchemaVersion: q.SchemaVersion, DigestAlgorithmVersion: string(q.DigestAlgorithmVersion), Digest: q.Digest}
}

// owners answers Metering's owner reads (Execution's eligibility fact,
// Core's admission manifest, the Gateway's availability, evidence and
// Current Receipt) from what the fixtures registered: an owner that stores
// exactly those objects.
type owners struct {
	mu        sync.Mutex
	facts     map[strict.Quadruple]*contract.ExecutionEligibilityFact
	manifests map[strict.Quadruple]*contract.RunAdmissionManifest
	snaps     map[strict.Quadruple]*contract.AvailabilitySnapshot
	evidence  map[strict.Quadruple]*contract.ProviderEvidence
	receipts  map[string]*contract.AvailabilityCurrentValidationReceipt
}

var _ metering.OwnerReads = (*owners)(nil)

func newOwners() *owners {
	return &owners{facts: map[strict.Quadruple]*contract.ExecutionEligibilityFact{}, manifests: map[strict.Quadruple]*contract.RunAdmissionManifest{},
		snaps: map[strict.Quadruple]*contract.AvailabilitySnapshot{}, evidence: map[strict.Quadruple]*contract.ProviderEvidence{},
		receipts: map[string]*contract.AvailabilityCurrentValidationReceipt{}}
}

func (o *owners) ReadEligibilityFact(_ context.Context, req executionread.EligibilityFactRead) (executionread.EligibilityFactResult, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if f, ok := o.facts[req.Fact]; ok {
		return executionread.EligibilityFactResult{Result: ownerread.FoundWith(f, nil)}, nil
	}
	return executionread.EligibilityFactResult{Result: ownerread.Missing[*contract.ExecutionEligibilityFact]()}, nil
}

func (o *owners) ReadRunAdmissionManifest(_ context.Context, req coreread.RunAdmissionManifestRead) (coreread.ManifestResult, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if m, ok := o.manifests[req.Manifest]; ok {
		return ownerread.FoundWith(m, nil), nil
	}
	return ownerread.Missing[*contract.RunAdmissionManifest](), nil
}

// ReadAttemptManifest answers the attempt's manifest (the one its
// eligibility fact names) with the usage dimensions the fixtures gave it
// availability for as its frozen charge dimension set.
func (o *owners) ReadAttemptManifest(_ context.Context, req executionread.AttemptManifestRead) (executionread.AttemptManifestResult, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, f := range o.facts {
		if f.ExecutionAttemptID != req.ExecutionAttemptID || f.AttemptManifest != req.AttemptManifest {
			continue
		}
		var keys []string
		for _, s := range o.snaps {
			if s.SlotKey.ExecutionAttemptID == f.ExecutionAttemptID && s.EvidenceKind == contract.EvidenceProviderUsage && !slices.Contains(keys, s.DimensionKey) {
				keys = append(keys, s.DimensionKey)
			}
		}
		slices.Sort(keys)
		return ownerread.FoundWith(&contract.AttemptExecutionManifest{Manifest: f.AttemptManifest, RunID: f.RunID, RunStepID: f.RunStepID,
			ExecutionAttemptID: f.ExecutionAttemptID, ChargeDimensionRegistryVersion: settlement.ChargeDimensionRegistryVersion, ChargeDimensionKeys: keys}, nil), nil
	}
	return ownerread.Missing[*contract.AttemptExecutionManifest](), nil
}

func (o *owners) ReadAvailabilitySnapshot(_ context.Context, req gatewayread.AvailabilitySnapshotRead) (gatewayread.AvailabilityResult, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if s, ok := o.snaps[req.Snapshot]; ok && s.StateVersion == req.StateVersion {
		return ownerread.FoundWith(s, nil), nil
	}
	return ownerread.Missing[*contract.AvailabilitySnapshot](), nil
}

func (o *owners) ReadProviderEvidence(_ context.Context, req gatewayread.ProviderEvidenceRead) (gatewayread.ProviderEvidenceResult, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ev, ok := o.evidence[req.Evidence]; ok {
		return gatewayread.ProviderEvidenceResult{Result: ownerread.FoundWith(ev, nil)}, nil
	}
	return gatewayread.ProviderEvidenceResult{Result: ownerread.Missing[*contract.ProviderEvidence]()}, nil
}

// ValidateAvailabilityCurrent answers like the Gateway: the chain's Current
// is its highest registered state version; one receipt per operation.
func (o *owners) ValidateAvailabilityCurrent(_ context.Context, req gatewayread.AvailabilityValidationRequest) (gatewayread.AvailabilityValidationResult, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if r, ok := o.receipts[req.OperationID]; ok {
		return ownerread.FoundWith(r, nil), nil
	}
	s, ok := o.snaps[req.Snapshot]
	if !ok || s.StateVersion != req.StateVersion {
		return ownerread.Missing[*contract.AvailabilityCurrentValidationReceipt](), nil
	}
	head := s
	for _, c := range o.snaps {
		if c.SlotKey == s.SlotKey && c.EvidenceKind == s.EvidenceKind && c.DimensionKey == s.DimensionKey && c.StateVersion > head.StateVersion {
			head = c
		}
	}
	r := &contract.AvailabilityCurrentValidationReceipt{Receipt: strict.Quadruple{Ref: "gacvr-" + req.OperationID}, Purpose: req.Purpose,
		OperationID: req.OperationID, BasisDigest: req.BasisDigest, SlotKey: s.SlotKey, EvidenceKind: s.EvidenceKind,
		DimensionKey: s.DimensionKey, Validated: s.Snapshot, ValidatedStateVersion: s.StateVersion, Current: head == s, ValidatedAt: occurred}
	if head != s {
		r.CurrentSnapshot, r.CurrentStateVersion = head.Snapshot, head.StateVersion
	}
	if _, err := contract.Seal(r); err != nil {
		return gatewayread.AvailabilityValidationResult{}, err
	}
	o.receipts[req.OperationID] = r
	return ownerread.FoundWith(r, nil), nil
}

// attempt is one execution attempt of a reservation's run, as the other
// owners' events name it.
type attempt struct {
	tenant, workspace, account, reservation, run, step, id string
	manifest                                               strict.Quadruple
}

// newAttempt is another attempt of the run of r (a new step): same tenant,
// account, reservation and run.
func (r attempt) newAttempt() attempt {
	r.step, r.id = uuid.NewString(), uuid.NewString()
	r.manifest = quad("aem-" + r.id)
	return r
}

// newReservation is the first attempt of a new reservation's run.
func newReservation() attempt {
	return attempt{tenant: uuid.NewString(), workspace: uuid.NewString(), account: uuid.NewString(), reservation: uuid.NewString(),
		run: uuid.NewString()}.newAttempt()
}

func (a attempt) dimension(key string) string {
	return envelope.SettlementDimensionID(a.reservation, a.run, a.step, a.id, key)
}

func (e *env) deliver(t *testing.T, ev envelope.Envelope) {
	t.Helper()
	built, err := envelope.Build(ev)
	require.NoError(t, err)
	canonical, err := built.Canonical()
	require.NoError(t, err)
	d, err := built.Digest()
	require.NoError(t, err)
	m := route.Member{EventType: built.EventType, EventSchemaVersion: built.EventSchemaVersion,
		Destination: route.MeteringInputProcessor, ConsumerName: route.MeteringInputProcessorConsumer,
		ExpectedReceiptType: route.MeteringInputProcessorConsumerReceipt, ExpectedReceiptSchemaVersion: route.ReceiptSchemaVersion1,
		ProjectionTarget: route.NotApplicable, Mandatory: true}
	_, err = e.inputs.Consume(t.Context(), transport.Delivery{EventID: built.EventID, EventType: built.EventType, EventSchemaVersion: built.EventSchemaVersion,
		Envelope: canonical, EnvelopeDigest: d, Member: m, AttemptID: uuid.NewString(), AttemptNumber: 1})
	require.NoError(t, err, "%s %s", built.EventType, built.EventID)
}

// availability delivers the Gateway's availability event of state version
// sv of the attempt's usage chain for one dimension (registered with the
// Gateway, with its evidence when available).
func (e *env) availability(t *testing.T, a attempt, dim string, sv int64, state string) {
	t.Helper()
	sq := quad("gas-" + a.dimension(dim) + "-" + state)
	ev := quad("gpe-" + a.dimension(dim) + "-" + state)
	binding, routeSnapshot := quad("arb-"+a.id), quad("grs-"+a.id)
	kind := receipt.EvidenceProviderUsage
	e.owners.mu.Lock()
	snap := &contract.AvailabilitySnapshot{Snapshot: sq, EvidenceKind: kind, DimensionKey: dim, State: state, StateVersion: sv,
		SlotKey: contract.SlotKey{ExecutionAttemptID: a.id, GatewayDeploymentID: deployment, AttemptManifest: a.manifest},
		Binding: binding, RouteSnapshot: routeSnapshot}
	if state == contract.AvailabilityAvailable {
		snap.Evidence = ev
		e.owners.evidence[ev] = &contract.ProviderEvidence{Evidence: ev, ExecutionAttemptID: a.id, GatewayDeploymentID: deployment,
			Binding: binding, EvidenceKind: kind, DimensionKey: dim, Quantity: "1200"}
	}
	e.owners.snaps[sq] = snap
	e.owners.mu.Unlock()

	p := envelope.GatewayEvidenceAvailabilityCurrentChangedV1Payload{ExecutionAttemptID: a.id, GatewayDeploymentID: deployment,
		ProviderEvidenceKind: kind, EvidenceDimensionKey: dim, CurrentAvailabilityStateVersion: sv,
		AvailableEvidence: envelope.GatewayAvailableEvidenceV1{State: "none"}}
	p.SetAttemptExecutionManifest(a.manifest)
	p.SetAttemptRouteBinding(binding)
	p.SetGatewayRouteSnapshot(routeSnapshot)
	p.SetCurrentAvailability(sq)
	if state == contract.AvailabilityAvailable {
		p.AvailableEvidence = envelope.GatewayAvailableEvidenceV1{State: "present", ProviderEvidenceRef: ev.Ref, ProviderEvidenceSchemaVersion: ev.SchemaVersion,
			ProviderEvidenceDigestAlgorithmVersion: string(ev.DigestAlgorithmVersion), ProviderEvidenceDigest: ev.Digest}
	}
	e.deliver(t, envelope.Envelope{EventID: uuid.NewString(), EventType: envelope.GatewayAvailabilityCurrentChangedV1, EventSchemaVersion: "1",
		AggregateType: envelope.AggregateGatewayAvailabilityChain, AggregateID: envelope.GatewayAvailabilityChainID(a.id, deployment, kind, dim),
		AggregateRevision: sv, TenantKind: envelope.TenantOrganization, TenantID: a.tenant, WorkspaceID: a.workspace,
		CorrelationID: a.run, OperationID: uuid.NewString(), OccurredAt: occurred, Payload: p.Map()})
}

// dispatched delivers usage version 1 of two dimensions (output available,
// input pending), then the attempt's dispatched eligibility (registered
// with Execution, its admission manifest with Core).
func (e *env) dispatched(t *testing.T, a attempt) {
	t.Helper()
	e.availability(t, a, dimOut, 1, contract.AvailabilityAvailable)
	e.availability(t, a, dimIn, 1, contract.AvailabilityPending)
	fq, ram := quad("eef-"+a.id), quad("ram-"+a.run)
	e.owners.mu.Lock()
	e.owners.facts[fq] = &contract.ExecutionEligibilityFact{Fact: fq, ExecutionAttemptID: a.id, Disposition: contract.DispositionDispatched,
		RunID: a.run, RunStepID: a.step, BillingAccountID: a.account, BillingReservationID: a.reservation,
		RunAdmissionManifest: ram, AttemptManifest: a.manifest}
	e.owners.manifests[ram] = &contract.RunAdmissionManifest{Manifest: ram, RunID: a.run,
		Tenant:           contract.Tenant{Kind: envelope.TenantOrganization, TenantID: a.tenant, WorkspaceID: a.workspace},
		BillingAccountID: a.account, BillingReservationID: a.reservation, ReservedCredits: 1000}
	e.owners.mu.Unlock()
	p := envelope.ExecutionAttemptEligibilityFinalizedV1Payload{BillingReservationID: a.reservation, BillingAccountID: a.account,
		RunID: a.run, RunStepID: a.step, ExecutionAttemptID: a.id}
	p.SetAttemptExecutionManifest(a.manifest)
	p.SetExecutionEligibilityFact(fq)
	e.deliver(t, envelope.Envelope{EventID: uuid.NewString(), EventType: envelope.ExecutionAttemptEligibilityFinalizedV1, EventSchemaVersion: "1",
		AggregateType: envelope.AggregateExecutionAttempt, AggregateID: a.id, AggregateRevision: 1,
		TenantKind: envelope.TenantOrganization, TenantID: a.tenant, WorkspaceID: a.workspace,
		CorrelationID: a.run, OperationID: uuid.NewString(), OccurredAt: occurred, Payload: p.Map()})
}

// work runs Metering's worker until no eligibility Work is claimable and
// returns how many settlement input versions it appended.
func (e *env) work(t *testing.T) int {
	t.Helper()
	n := 0
	for {
		a, err := metering.ClaimLane(t.Context(), e.admin, receipt.LaneEligibility, time.Hour)
		if errors.Is(err, metering.ErrNoWork) {
			return n
		}
		require.NoError(t, err)
		out, err := e.worker.Process(t.Context(), a)
		require.NoError(t, err)
		require.Nil(t, out.Blocked)
		require.NotNil(t, out.Finished)
		n += out.NewSnapshots
	}
}

// want is what a dimension's Current input should be.
type want struct {
	attempt        attempt
	key            string
	stateVersion   int64
	reconciliation string
}

// requireInputs checks an answer against the dimensions it must hold,
// exactly, in settlement dimension order: each body decodes strictly (its
// digest recomputes) and names the answer's quadruple, state version,
// reservation, attempt, dimension and reconciliation state, and each is
// Metering's Current input of its dimension, byte for byte.
func (e *env) requireInputs(t *testing.T, got apigen.ReservationSettlementInputs, wants ...want) {
	t.Helper()
	sort.Slice(wants, func(i, j int) bool {
		return wants[i].attempt.dimension(wants[i].key) < wants[j].attempt.dimension(wants[j].key)
	})
	wantDims, gotDims := make([]string, 0, len(wants)), make([]string, 0, len(got.Inputs))
	for _, w := range wants {
		wantDims = append(wantDims, w.attempt.dimension(w.key))
	}
	for _, in := range got.Inputs {
		gotDims = append(gotDims, in.SettlementDimensionId.String())
	}
	require.Equal(t, wantDims, gotDims, "exactly the reservation's dimensions, once each, in settlement dimension order")
	for i, w := range wants {
		in := got.Inputs[i]
		dim := w.attempt.dimension(w.key)
		require.Equal(t, w.attempt.id, in.ExecutionAttemptId.String())
		require.Equal(t, w.stateVersion, in.StateVersion, "%s: its Current state version", w.key)
		require.EqualValues(t, w.reconciliation, in.ReconciliationState, w.key)
		s, err := settlement.Decode([]byte(in.SnapshotBody))
		require.NoError(t, err, "the body decodes strictly and its digest recomputes")
		require.Equal(t, in.Snapshot, apiQuad(s.Snapshot), "the quadruple is the body's")
		require.Equal(t, in.StateVersion, s.StateVersion)
		require.Equal(t, got.BillingReservationId.String(), s.BillingReservationID)
		require.Equal(t, w.attempt.id, s.ExecutionAttemptID)
		require.Equal(t, dim, s.SettlementDimensionID)
		require.Equal(t, w.key, s.ChargeDimensionKey)
		require.Equal(t, w.reconciliation, s.ReconciliationState)
		cur, err := metering.ReadCurrentSettlementInput(t.Context(), e.admin, dim)
		require.NoError(t, err)
		require.Equal(t, in.Snapshot, apiQuad(cur.Ref.Snapshot), "Metering's Current")
		require.Equal(t, string(cur.Body), in.SnapshotBody, "the stored canonical body, byte for byte")
	}
}

// ME-1 through the API (issue 33): getReservationSettlementInputs answers
// the Current SettlementInputSnapshot@1 of every settlement dimension of the
// reservation's attempts, as Metering's worker formed them from the other
// owners' events: two attempts, two dimensions each; after one dimension
// advanced to state version 2 only version 2 is answered. Another
// reservation's inputs are not included, and the read writes nothing.
func TestME1ReservationSettlementInputsOverTheAPI(t *testing.T) {
	t.Parallel()
	e := setup(t)
	first := newReservation()
	second := first.newAttempt()
	other := newReservation()
	e.dispatched(t, first)
	e.dispatched(t, second)
	e.dispatched(t, other)
	require.Equal(t, 6, e.work(t), "three attempts, two dimensions each")

	got := e.settlementInputs(t, first.reservation)
	e.requireInputs(t, got,
		want{first, dimIn, 1, settlement.ReconciliationAwaitingEvidence}, want{first, dimOut, 1, settlement.ReconciliationNotRequired},
		want{second, dimIn, 1, settlement.ReconciliationAwaitingEvidence}, want{second, dimOut, 1, settlement.ReconciliationNotRequired})

	// The first attempt's input usage becomes available: its dimension
	// advances to state version 2; only version 2 is answered.
	e.availability(t, first, dimIn, 2, contract.AvailabilityAvailable)
	require.Equal(t, 1, e.work(t))
	require.Equal(t, 2, e.count(t, `SELECT count(*) FROM metering.settlement_input_snapshots WHERE settlement_dimension_id = $1`, first.dimension(dimIn)),
		"version 1 stays in the dimension's history")
	before := e.metered(t)
	got = e.settlementInputs(t, first.reservation)
	e.requireInputs(t, got,
		want{first, dimIn, 2, settlement.ReconciliationNotRequired}, want{first, dimOut, 1, settlement.ReconciliationNotRequired},
		want{second, dimIn, 1, settlement.ReconciliationAwaitingEvidence}, want{second, dimOut, 1, settlement.ReconciliationNotRequired})
	for _, in := range got.Inputs {
		if in.SettlementDimensionId.String() != first.dimension(dimIn) {
			continue
		}
		s, err := settlement.Decode([]byte(in.SnapshotBody))
		require.NoError(t, err)
		require.NotNil(t, s.Predecessor)
		require.EqualValues(t, 1, s.Predecessor.StateVersion, "version 2 names version 1 as its predecessor")
	}

	// The other reservation answers its own inputs only.
	e.requireInputs(t, e.settlementInputs(t, other.reservation),
		want{other, dimIn, 1, settlement.ReconciliationAwaitingEvidence}, want{other, dimOut, 1, settlement.ReconciliationNotRequired})
	require.Equal(t, before, e.metered(t), "a read writes nothing")
}

// ME-1 through the API: a reservation Metering has no input for answers 200
// with an empty list (never null, never 404); a reservation id that is not
// a UUID is 400 invalid_request.
func TestME1ReservationSettlementInputsOverTheAPIUnknownAndMalformed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := newReservation()
	e.dispatched(t, a)
	require.Equal(t, 2, e.work(t))

	unknown := uuid.NewString()
	r := e.call(t, inputsPath(unknown), e.token(t, api.Audience(api.OwnerMetering), operation))
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.JSONEq(t, `{"billingReservationId":"`+unknown+`","inputs":[]}`, string(r.body))
	// The attempt's id is not a reservation id.
	require.Empty(t, e.settlementInputs(t, a.id).Inputs)

	for _, bad := range []string{"not-a-uuid", "1234567", a.reservation + "0"} {
		r := e.call(t, inputsPath(bad), e.token(t, api.Audience(api.OwnerMetering), operation))
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", bad, r.body)
		require.Equal(t, api.CodeInvalidRequest, problemCode(t, r), bad)
	}
}

// Issue 33: Metering's operation takes only a token for audience
// metering_api (a core_api token is 401, no token is 401) and its own scope
// (a metering_api token for another operation is 403).
func TestMeteringAPIRefusesAnotherAudienceOrScope(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := newReservation()
	e.dispatched(t, a)
	require.Equal(t, 2, e.work(t))
	path := inputsPath(a.reservation)

	r := e.call(t, path, e.token(t, api.AudienceCore, operation))
	require.Equal(t, http.StatusUnauthorized, r.status, string(r.body))
	require.Equal(t, api.CodeUnauthorized, problemCode(t, r))
	r = e.call(t, path, "")
	require.Equal(t, http.StatusUnauthorized, r.status, string(r.body))
	require.Equal(t, api.CodeUnauthorized, problemCode(t, r))
	r = e.call(t, path, e.token(t, api.Audience(api.OwnerMetering), "getReservation"))
	require.Equal(t, http.StatusForbidden, r.status, string(r.body))
	require.Equal(t, api.CodeForbidden, problemCode(t, r))
	require.Len(t, e.settlementInputs(t, a.reservation).Inputs, 2, "the right audience and scope read the inputs")
}
