package metering_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
)

var occurred = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func id(parts ...any) string {
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte(fmt.Sprint(parts...))).String()
}

func quad(ref string) strict.Quadruple {
	h := sha256.Sum256([]byte(ref))
	return strict.Quadruple{Ref: ref, SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: hex.EncodeToString(h[:])}
}

// fakeOwners answers the two event-bound reads from what the fixtures
// registered (an owner that stores exactly those objects); block makes
// every read fail (the owner is unavailable).
type fakeOwners struct {
	mu       sync.Mutex
	facts    map[strict.Quadruple]*contract.ExecutionEligibilityFact
	snaps    map[strict.Quadruple]*contract.AvailabilitySnapshot
	evidence map[strict.Quadruple]*contract.ProviderEvidence
	blocked  atomic.Bool
	conflict atomic.Bool
	// validationConflict makes only the current validation answer
	// conflicting; validations counts the validation calls.
	validationConflict    atomic.Bool
	validationUnavailable atomic.Bool
	validations           atomic.Int64
	receipts              map[string]*contract.AvailabilityCurrentValidationReceipt
	requested             map[string]int // validation calls per operation id
	// manifests are Core's RunAdmissionManifest@1 by quadruple;
	// manifestConflict makes only the manifest read answer conflicting.
	manifests        map[strict.Quadruple]*contract.RunAdmissionManifest
	manifestConflict atomic.Bool
	// registered is the charge dimension set each attempt's manifest froze
	// (by attempt id); unset, the attempt registers the usage dimensions
	// the fixtures gave it availability for (sorted).
	registered map[string][]string
	// disputed makes the evidence read answer conflicting with a sealed
	// GatewayEvidenceConflictFact@1 about the evidence (the Gateway's
	// stored conflict fact, issue 32); clearing it is the owner's fix.
	disputed atomic.Bool
	// eligibilityDisputed: the eligibility read answers conflicting with a
	// sealed ExecutionEligibilityConflictFact@1 (Execution's stored fact).
	eligibilityDisputed atomic.Bool
	// gate, when set, holds ReadProviderEvidence (a worker between its
	// bootstrap reads and its processing transaction) until released.
	gate atomic.Pointer[gate]
	// beforeAvailability, when set, runs first in ReadAvailabilitySnapshot
	// (the input processor's read, before it locks the attempt's fence).
	beforeAvailability atomic.Pointer[func(gatewayread.AvailabilitySnapshotRead)]
}

// gate holds a caller at a point: reached is closed when it gets there,
// release lets it go on.
type gate struct{ reached, release chan struct{} }

func newGate() *gate { return &gate{reached: make(chan struct{}), release: make(chan struct{})} }

// pass is called at the held point (once).
func (g *gate) pass() {
	close(g.reached)
	<-g.release
}

func newOwners() *fakeOwners {
	return &fakeOwners{facts: map[strict.Quadruple]*contract.ExecutionEligibilityFact{}, snaps: map[strict.Quadruple]*contract.AvailabilitySnapshot{},
		evidence: map[strict.Quadruple]*contract.ProviderEvidence{}}
}

var errUnavailable = errors.New("owner unavailable")

func (o *fakeOwners) ReadEligibilityFact(_ context.Context, req executionread.EligibilityFactRead) (executionread.EligibilityFactResult, error) {
	if o.blocked.Load() {
		return executionread.EligibilityFactResult{}, errUnavailable
	}
	if o.conflict.Load() {
		return executionread.EligibilityFactResult{Result: ownerread.Conflict[*contract.ExecutionEligibilityFact]("test conflict")}, nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	f, ok := o.facts[req.Fact]
	if !ok {
		return executionread.EligibilityFactResult{Result: ownerread.Missing[*contract.ExecutionEligibilityFact]()}, nil
	}
	if o.eligibilityDisputed.Load() {
		c := &contract.ExecutionEligibilityConflictFact{Fact: strict.Quadruple{Ref: "eec-" + f.Fact.Ref}, RunID: req.RunID, RunStepID: req.RunStepID,
			ExecutionAttemptID: req.ExecutionAttemptID, RequestedFact: req.Fact, RequestedManifest: req.AttemptManifest,
			ReasonCode: contract.EligibilityConflictStoredInvalid, DetectedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		body, err := contract.Seal(c)
		if err != nil {
			return executionread.EligibilityFactResult{}, err
		}
		return executionread.EligibilityFactResult{Result: ownerread.Conflict[*contract.ExecutionEligibilityFact](c.ReasonCode), Conflict: c, ConflictBody: body}, nil
	}
	return executionread.EligibilityFactResult{Result: ownerread.FoundWith(f, nil)}, nil
}

func (o *fakeOwners) ReadAvailabilitySnapshot(_ context.Context, req gatewayread.AvailabilitySnapshotRead) (gatewayread.AvailabilityResult, error) {
	if f := o.beforeAvailability.Load(); f != nil {
		(*f)(req)
	}
	if o.blocked.Load() {
		return gatewayread.AvailabilityResult{}, errUnavailable
	}
	if o.conflict.Load() {
		return ownerread.Conflict[*contract.AvailabilitySnapshot]("test conflict"), nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	s, ok := o.snaps[req.Snapshot]
	if !ok || s.StateVersion != req.StateVersion {
		return ownerread.Missing[*contract.AvailabilitySnapshot](), nil
	}
	return ownerread.FoundWith(s, nil), nil
}

// ValidateAvailabilityCurrent answers like the Gateway: the chain's Current
// is the highest registered state version of the snapshot's chain; one
// receipt per operation (a replay returns it, another request conflicts).
func (o *fakeOwners) ValidateAvailabilityCurrent(_ context.Context, req gatewayread.AvailabilityValidationRequest) (gatewayread.AvailabilityValidationResult, error) {
	o.validations.Add(1)
	o.mu.Lock()
	if o.requested == nil {
		o.requested = map[string]int{}
	}
	o.requested[req.OperationID]++
	o.mu.Unlock()
	if o.blocked.Load() || o.validationUnavailable.Load() {
		return gatewayread.AvailabilityValidationResult{}, errUnavailable
	}
	if o.conflict.Load() || o.validationConflict.Load() {
		return ownerread.Conflict[*contract.AvailabilityCurrentValidationReceipt]("test conflict"), nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if r, ok := o.receipts[req.OperationID]; ok {
		if r.Validated != req.Snapshot || r.BasisDigest != req.BasisDigest {
			return ownerread.Conflict[*contract.AvailabilityCurrentValidationReceipt]("the operation validated another request"), nil
		}
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
	if o.receipts == nil {
		o.receipts = map[string]*contract.AvailabilityCurrentValidationReceipt{}
	}
	o.receipts[req.OperationID] = r
	return ownerread.FoundWith(r, nil), nil
}

func (o *fakeOwners) ReadRunAdmissionManifest(_ context.Context, req coreread.RunAdmissionManifestRead) (coreread.ManifestResult, error) {
	if o.blocked.Load() {
		return coreread.ManifestResult{}, errUnavailable
	}
	if o.manifestConflict.Load() {
		return ownerread.Conflict[*contract.RunAdmissionManifest]("test conflict"), nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	m, ok := o.manifests[req.Manifest]
	if !ok {
		return ownerread.Missing[*contract.RunAdmissionManifest](), nil
	}
	return ownerread.FoundWith(m, nil), nil
}

// ReadAttemptManifest answers like Execution: the attempt's manifest (the
// quadruple the eligibility fact names) with its frozen charge dimensions.
func (o *fakeOwners) ReadAttemptManifest(_ context.Context, req executionread.AttemptManifestRead) (executionread.AttemptManifestResult, error) {
	if o.blocked.Load() {
		return executionread.AttemptManifestResult{}, errUnavailable
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var fact *contract.ExecutionEligibilityFact
	for _, f := range o.facts {
		if f.ExecutionAttemptID == req.ExecutionAttemptID {
			fact = f
		}
	}
	if fact == nil {
		return ownerread.Missing[*contract.AttemptExecutionManifest](), nil
	}
	if fact.AttemptManifest != req.AttemptManifest {
		return ownerread.Conflict[*contract.AttemptExecutionManifest]("the attempt has another manifest"), nil
	}
	keys, ok := o.registered[req.ExecutionAttemptID]
	if !ok {
		seen := map[string]bool{}
		for _, s := range o.snaps {
			if s.SlotKey.ExecutionAttemptID == req.ExecutionAttemptID && s.EvidenceKind == contract.EvidenceProviderUsage && !seen[s.DimensionKey] {
				seen[s.DimensionKey] = true
				keys = append(keys, s.DimensionKey)
			}
		}
		slices.Sort(keys)
	}
	return ownerread.FoundWith(&contract.AttemptExecutionManifest{Manifest: fact.AttemptManifest, RunID: fact.RunID, RunStepID: fact.RunStepID,
		ExecutionAttemptID: fact.ExecutionAttemptID, RunAdmissionManifest: fact.RunAdmissionManifest,
		ChargeDimensionRegistryVersion: settlement.ChargeDimensionRegistryVersion, ChargeDimensionKeys: slices.Clone(keys)}, nil), nil
}

// register freezes an attempt's charge dimension set (its manifest's).
func (o *fakeOwners) register(attemptID string, keys ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.registered == nil {
		o.registered = map[string][]string{}
	}
	o.registered[attemptID] = keys
}

func (o *fakeOwners) ReadProviderEvidence(_ context.Context, req gatewayread.ProviderEvidenceRead) (gatewayread.ProviderEvidenceResult, error) {
	if g := o.gate.Swap(nil); g != nil {
		g.pass()
	}
	if o.blocked.Load() {
		return gatewayread.ProviderEvidenceResult{}, errUnavailable
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.evidence[req.Evidence]
	if !ok {
		return gatewayread.ProviderEvidenceResult{Result: ownerread.Missing[*contract.ProviderEvidence]()}, nil
	}
	if o.disputed.Load() {
		f := &contract.GatewayEvidenceConflictFact{Fact: strict.Quadruple{Ref: "gec-" + e.Evidence.Ref}, ExecutionAttemptID: e.ExecutionAttemptID,
			GatewayDeploymentID: e.GatewayDeploymentID, Binding: e.Binding, EvidenceKind: e.EvidenceKind, DimensionKey: e.DimensionKey,
			Evidence: e.Evidence, ProviderReportID: "sim-r1", ConflictingQuantity: "999999", ReasonCode: contract.EvidenceConflictReportDisagrees,
			DetectedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		body, err := contract.Seal(f)
		if err != nil {
			return gatewayread.ProviderEvidenceResult{}, err
		}
		return gatewayread.ProviderEvidenceResult{Result: ownerread.Conflict[*contract.ProviderEvidence](f.ReasonCode), Conflict: f, ConflictBody: body}, nil
	}
	return gatewayread.ProviderEvidenceResult{Result: ownerread.FoundWith(e, nil)}, nil
}

// attemptFixture builds the events of one attempt deterministically.
type attemptFixture struct {
	n          int
	attemptID  string
	runID      string
	manifest   strict.Quadruple
	deployment string
}

func newAttempt(n int) attemptFixture {
	return attemptFixture{n: n, attemptID: id("attempt", n), runID: id("run", n), manifest: quad(fmt.Sprintf("aem-%d", n)), deployment: "gw-deploy-1"}
}

func build(e envelope.Envelope) *envelope.Envelope {
	out, err := envelope.Build(e)
	if err != nil {
		panic(err)
	}
	return out
}

// eligibility is the attempt's execution.attempt-eligibility.finalized@1
// (registered with the owner unless unregistered).
func (a attemptFixture) eligibility(o *fakeOwners, disposition string) *envelope.Envelope {
	fq := quad(fmt.Sprintf("eef-%d-%s", a.n, disposition))
	if o != nil {
		o.mu.Lock()
		f := &contract.ExecutionEligibilityFact{Fact: fq, ExecutionAttemptID: a.attemptID, Disposition: disposition,
			RunID: a.runID, RunStepID: id("step", a.n), BillingAccountID: id("account", a.n), BillingReservationID: id("reservation", a.n),
			RunAdmissionManifest: quad(fmt.Sprintf("ram-%d", a.n)), AttemptManifest: a.manifest}
		if disposition == contract.DispositionNotDispatched {
			f.NotDispatched = quad(fmt.Sprintf("and-%d", a.n))
		}
		o.facts[fq] = f
		if o.manifests == nil {
			o.manifests = map[strict.Quadruple]*contract.RunAdmissionManifest{}
		}
		o.manifests[f.RunAdmissionManifest] = &contract.RunAdmissionManifest{Manifest: f.RunAdmissionManifest, RunID: a.runID,
			Tenant:           contract.Tenant{Kind: envelope.TenantOrganization, TenantID: id("tenant"), WorkspaceID: id("workspace")},
			BillingAccountID: f.BillingAccountID, BillingReservationID: f.BillingReservationID, ReservedCredits: 1000}
		o.mu.Unlock()
	}
	p := envelope.ExecutionAttemptEligibilityFinalizedV1Payload{
		BillingReservationID: id("reservation", a.n), BillingAccountID: id("account", a.n), RunID: a.runID,
		RunStepID: id("step", a.n), ExecutionAttemptID: a.attemptID,
	}
	p.SetAttemptExecutionManifest(a.manifest)
	p.SetExecutionEligibilityFact(fq)
	return build(envelope.Envelope{
		EventID: id("eligibility-event", a.n, disposition), EventType: envelope.ExecutionAttemptEligibilityFinalizedV1, EventSchemaVersion: "1",
		AggregateType: envelope.AggregateExecutionAttempt, AggregateID: a.attemptID, AggregateRevision: 1,
		TenantKind: envelope.TenantOrganization, TenantID: id("tenant"), WorkspaceID: id("workspace"),
		CorrelationID: a.runID, OperationID: id("eligibility-op", a.n), OccurredAt: occurred, Payload: p.Map(),
	})
}

// availability is the gateway event of state version sv of the chain
// (kind, dimension); variant changes the snapshot (same revision, other digest).
func (a attemptFixture) availability(o *fakeOwners, kind, dim string, sv int64, state, variant string) *envelope.Envelope {
	sq := quad(fmt.Sprintf("gas-%d-%s-%s-%d%s", a.n, kind, dim, sv, variant))
	ev := quad(fmt.Sprintf("gpe-%d-%s-%s-%d%s", a.n, kind, dim, sv, variant))
	if o != nil {
		o.mu.Lock()
		snap := &contract.AvailabilitySnapshot{Snapshot: sq, EvidenceKind: kind, DimensionKey: dim, State: state, StateVersion: sv,
			SlotKey: contract.SlotKey{ExecutionAttemptID: a.attemptID, GatewayDeploymentID: a.deployment, AttemptManifest: a.manifest},
			Binding: quad(fmt.Sprintf("arb-%d", a.n)), RouteSnapshot: quad(fmt.Sprintf("grs-%d", a.n))}
		if state == contract.AvailabilityAvailable {
			snap.Evidence = ev
			o.evidence[ev] = &contract.ProviderEvidence{Evidence: ev, ExecutionAttemptID: a.attemptID, GatewayDeploymentID: a.deployment,
				Binding: snap.Binding, EvidenceKind: kind, DimensionKey: dim, Quantity: quantityOf(sv, variant)}
		}
		o.snaps[sq] = snap
		o.mu.Unlock()
	}
	p := envelope.GatewayEvidenceAvailabilityCurrentChangedV1Payload{
		ExecutionAttemptID: a.attemptID, GatewayDeploymentID: a.deployment, ProviderEvidenceKind: kind,
		EvidenceDimensionKey: dim, CurrentAvailabilityStateVersion: sv,
		AvailableEvidence: envelope.GatewayAvailableEvidenceV1{State: "none"},
	}
	p.SetAttemptExecutionManifest(a.manifest)
	p.SetAttemptRouteBinding(quad(fmt.Sprintf("arb-%d", a.n)))
	p.SetGatewayRouteSnapshot(quad(fmt.Sprintf("grs-%d", a.n)))
	p.SetCurrentAvailability(sq)
	if state == contract.AvailabilityAvailable {
		e := ev
		p.AvailableEvidence = envelope.GatewayAvailableEvidenceV1{State: "present", ProviderEvidenceRef: e.Ref, ProviderEvidenceSchemaVersion: e.SchemaVersion,
			ProviderEvidenceDigestAlgorithmVersion: string(e.DigestAlgorithmVersion), ProviderEvidenceDigest: e.Digest}
	}
	chain := envelope.GatewayAvailabilityChainID(a.attemptID, a.deployment, kind, dim)
	return build(envelope.Envelope{
		EventID: id("availability-event", a.n, kind, dim, sv, variant), EventType: envelope.GatewayAvailabilityCurrentChangedV1, EventSchemaVersion: "1",
		AggregateType: envelope.AggregateGatewayAvailabilityChain, AggregateID: chain, AggregateRevision: sv,
		TenantKind: envelope.TenantOrganization, TenantID: id("tenant"), WorkspaceID: id("workspace"),
		CorrelationID: a.runID, OperationID: id("availability-op", a.n, kind, dim, sv), OccurredAt: occurred, Payload: p.Map(),
	})
}

func member(eventType, schemaVersion string) route.Member {
	return route.Member{
		EventType: eventType, EventSchemaVersion: schemaVersion,
		Destination: route.MeteringInputProcessor, ConsumerName: route.MeteringInputProcessorConsumer,
		ExpectedReceiptType: route.MeteringInputProcessorConsumerReceipt, ExpectedReceiptSchemaVersion: route.ReceiptSchemaVersion1,
		ProjectionTarget: route.NotApplicable, Mandatory: true,
	}
}

func delivery(e *envelope.Envelope) transport.Delivery {
	canonical, err := e.Canonical()
	if err != nil {
		panic(err)
	}
	d, err := e.Digest()
	if err != nil {
		panic(err)
	}
	return transport.Delivery{EventID: e.EventID, EventType: e.EventType, EventSchemaVersion: e.EventSchemaVersion,
		Envelope: canonical, EnvelopeDigest: d, Member: member(e.EventType, e.EventSchemaVersion), AttemptID: uuid.NewString(), AttemptNumber: 1}
}

type bundle struct {
	pool   *pgxpool.Pool
	c      *metering.Consumer
	owners *fakeOwners
}

func setup(t *testing.T) *bundle {
	t.Helper()
	pool := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Metering},
		Lines: []migrate.Line{outboxschema.Line(), meteringschema.Line()}, MaxConns: 10}).Metering()
	o := newOwners()
	c, err := metering.New(pool, metering.Config{Inbox: inbox.Config{LockTimeout: time.Second}, Reads: o})
	require.NoError(t, err)
	return &bundle{pool: pool, c: c, owners: o}
}

func (b *bundle) deliver(t *testing.T, e *envelope.Envelope) (transport.Result, error) {
	t.Helper()
	return b.c.Consume(t.Context(), delivery(e))
}

func (b *bundle) ack(t *testing.T, e *envelope.Envelope) *receipt.MeteringInputProcessorConsumerReceipt {
	t.Helper()
	res, err := b.deliver(t, e)
	require.NoError(t, err, "%s %s", e.EventType, e.EventID)
	r, err := receipt.DecodeMeteringInputProcessorConsumerReceipt(res.ReceiptBody)
	require.NoError(t, err)
	require.NoError(t, r.VerifyDigest())
	return r
}

func requireCode(t *testing.T, err error, retryable bool, code string) {
	t.Helper()
	require.Error(t, err)
	r, c := transport.RetryableAndCode(err)
	require.Equal(t, code, c, "error: %v", err)
	require.Equal(t, retryable, r, "retryable? error: %v", err)
}

func retryableAndCode(err error) (bool, string) {
	if err == nil {
		return false, ""
	}
	return transport.RetryableAndCode(err)
}

// quantityOf is the fixture's measured quantity of a state version (a
// correction measures more).
func quantityOf(sv int64, variant string) string { return fmt.Sprint(1000*sv + int64(len(variant))) }
