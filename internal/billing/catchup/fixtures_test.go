package catchup_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
	admissionschema "github.com/oceanway/core/internal/admission/schema"
	"github.com/oceanway/core/internal/billing/catchup"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/release"
)

var catchUpAt = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func cid(parts ...any) string {
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte(fmt.Sprint(parts...))).String()
}

func cquad(ref string) strict.Quadruple {
	h := sha256.Sum256([]byte(ref))
	return strict.Quadruple{Ref: ref, SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: hex.EncodeToString(h[:])}
}

var catchUpTenant = catchup.Tenant{Kind: "organization", ID: cid("tenant"), WorkspaceID: cid("workspace")}

func catchUpDimension(n int) billingc.SettlementDimension {
	return billingc.SettlementDimension{BillingReservationID: cid("reservation", n), BillingAccountID: cid("account", n),
		RunID: cid("run", n), RunStepID: cid("step", n), ExecutionAttemptID: cid("attempt", n), ChargeDimensionKey: "tokens.output",
		EconomicIdentity: envelope.SettlementEconomicIdentityV1{Kind: "credits"}}
}

func settlementInputOf(d billingc.SettlementDimension, v int64) billingc.SettlementInput {
	return billingc.SettlementInput{Snapshot: cquad(fmt.Sprintf("sis-%s-%d", d.SettlementDimensionID(), v)), StateVersion: v}
}

// inputEvent is metering.settlement-input.current-changed@1 of d at state
// version v (predecessor v-1).
func inputEvent(d billingc.SettlementDimension, v int64) *envelope.Envelope {
	in := settlementInputOf(d, v)
	p := envelope.MeteringSettlementInputCurrentChangedV1Payload{
		BillingReservationID: d.BillingReservationID, BillingAccountID: d.BillingAccountID, RunID: d.RunID, RunStepID: d.RunStepID,
		ExecutionAttemptID: d.ExecutionAttemptID, ChargeDimensionKey: d.ChargeDimensionKey, SettlementDimensionID: d.SettlementDimensionID(),
		SettlementEconomicIdentity: d.EconomicIdentity, SettlementInputStateVersion: v,
		PredecessorSettlementInput: envelope.SettlementInputPredecessorV1{State: "none"},
	}
	p.SetSettlementInputSnapshot(in.Snapshot)
	if v > 1 {
		prev := settlementInputOf(d, v-1).Snapshot
		p.PredecessorSettlementInput = envelope.SettlementInputPredecessorV1{State: "present", SettlementInputSnapshotRef: prev.Ref,
			SettlementInputSnapshotSchemaVersion: prev.SchemaVersion, SettlementInputSnapshotDigestAlgorithmVersion: string(prev.DigestAlgorithmVersion),
			SettlementInputSnapshotDigest: prev.Digest, SettlementInputStateVersion: v - 1}
	}
	e, err := envelope.Build(envelope.Envelope{
		EventID: cid("settlement-input-event", d.SettlementDimensionID(), v), EventType: envelope.MeteringSettlementInputCurrentChangedV1,
		EventSchemaVersion: "1", AggregateType: envelope.AggregateSettlementInputDimension, AggregateID: d.SettlementDimensionID(),
		AggregateRevision: v, TenantKind: catchUpTenant.Kind, TenantID: catchUpTenant.ID, WorkspaceID: catchUpTenant.WorkspaceID,
		CorrelationID: cid("correlation", d.BillingReservationID), OccurredAt: catchUpAt.Add(time.Duration(v) * time.Minute), Payload: p.Map(),
	})
	if err != nil {
		panic(err)
	}
	return e
}

func catchUpMember(eventType, schemaVersion string) route.Member {
	return route.Member{
		EventType: eventType, EventSchemaVersion: schemaVersion,
		Destination: route.BillingSettlementCatchUp, ConsumerName: route.BillingSettlementCatchUpConsumer,
		ExpectedReceiptType: route.BillingSettlementCatchUpConsumerReceipt, ExpectedReceiptSchemaVersion: route.ReceiptSchemaVersion1,
		ProjectionTarget: route.NotApplicable, Mandatory: true,
	}
}

func catchUpDelivery(e *envelope.Envelope) transport.Delivery {
	return deliveryTo(e, catchUpMember(e.EventType, e.EventSchemaVersion))
}

// deliveryTo is the first attempt's delivery of e to member m.
func deliveryTo(e *envelope.Envelope, m route.Member) transport.Delivery {
	canonical, err := e.Canonical()
	if err != nil {
		panic(err)
	}
	d, err := e.Digest()
	if err != nil {
		panic(err)
	}
	return transport.Delivery{EventID: e.EventID, EventType: e.EventType, EventSchemaVersion: e.EventSchemaVersion,
		Envelope: canonical, EnvelopeDigest: d, Member: m, AttemptID: uuid.NewString(), AttemptNumber: 1}
}

// fakeFinalization is the finalization fence's side, emulating
// billing.ApplySettlementInputTx: a per-reservation state (default: no
// fence, nothing written), the reservation's fence lock (a transaction
// advisory lock the test's finalize takes too), the real dimension
// watermark, and finalized once the catch-up fence exists.
type fakeFinalization struct {
	mu      sync.Mutex
	state   map[string]string
	seen    map[string]int
	blocked atomic.Bool
}

func newFakeFinalization() *fakeFinalization {
	return &fakeFinalization{state: map[string]string{}, seen: map[string]int{}}
}

func (f *fakeFinalization) set(reservationID, state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state[reservationID] = state
}

var errFinalizationBlocked = errors.New("finalization fence held by a long transaction")

const finalizationFenceLock = `SELECT pg_advisory_xact_lock(hashtextextended('test-finalization-fence|' || $1::text, 0))`

func (f *fakeFinalization) ObserveSettlementInputTx(ctx context.Context, tx pgx.Tx, in catchup.ObservedSettlementInput) (catchup.FinalizationInputObservation, error) {
	if f.blocked.Load() {
		return catchup.FinalizationInputObservation{}, transport.Retryable("test_blocked", errFinalizationBlocked)
	}
	if _, err := tx.Exec(ctx, finalizationFenceLock, in.Dimension.BillingReservationID); err != nil {
		return catchup.FinalizationInputObservation{}, err
	}
	var finalized bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM billing.settlement_catch_up_fences WHERE billing_reservation_id = $1)`,
		in.Dimension.BillingReservationID).Scan(&finalized); err != nil {
		return catchup.FinalizationInputObservation{}, err
	}
	if finalized {
		return catchup.FinalizationInputObservation{State: catchup.FinalizationInputFinalized}, nil
	}
	f.mu.Lock()
	st := f.state[in.Dimension.BillingReservationID]
	f.seen[in.Dimension.BillingReservationID]++
	f.mu.Unlock()
	if st == "" {
		return catchup.FinalizationInputObservation{State: catchup.FinalizationInputNotBindable}, nil
	}
	rev, highest, err := catchup.AdvanceWatermarkTx(ctx, tx, in.EventID, in.Dimension, in.Input, in.Now)
	if err != nil {
		return catchup.FinalizationInputObservation{}, err
	}
	if highest != nil {
		return catchup.FinalizationInputObservation{State: catchup.FinalizationInputAlreadyObserved, InboxRevision: rev, Highest: highest}, nil
	}
	switch st {
	case catchup.FinalizationInputWorkScheduled:
		gen := in.Input.StateVersion + 1
		return catchup.FinalizationInputObservation{State: st, InboxRevision: rev, WorkScheduled: &receipt.FinalizationWorkScheduled{
			FinalizationFenceRevision: gen, Work: receipt.FinalizationWorkBinding{WorkGeneration: gen,
				TriggerSnapshot: cquad(fmt.Sprintf("bft-%s-%d", in.Dimension.BillingReservationID, gen)),
				Work:            cquad(fmt.Sprintf("bfw-%s-%d", in.Dimension.BillingReservationID, gen))}}}, nil
	case catchup.FinalizationInputHeld:
		return catchup.FinalizationInputObservation{State: st, InboxRevision: rev, Held: &receipt.HeldForResolution{FinalizationFenceRevision: 4,
			ReconciliationCaseRef: "case-" + in.Dimension.BillingReservationID, ReconciliationGeneration: 1, ExpectedResolutionRevision: 1}}, nil
	}
	return catchup.FinalizationInputObservation{State: catchup.FinalizationInputNotBindable, InboxRevision: rev}, nil
}

// fakeMetering is the Metering owner's settlement input chain per
// dimension: the last appended input is current. Validations are answered
// per (purpose, operation) exactly once (the same operation returns the
// first answer, as validateSettlementInputCurrent's insert-or-compare does).
type fakeMetering struct {
	mu      sync.Mutex
	chain   map[string][]billingc.SettlementInput
	targets map[billingc.SettlementInput]string
	answers map[string]catchup.Validation
	ops     map[string]int // operation id → validations asked
	// asked is operation id → the distinct requests (purpose, input, basis)
	// it was asked with: an operation is never reused for another request.
	asked map[string]map[string]bool
	// beforeValidate runs before a validation is answered (test hooks).
	beforeValidate func(req catchup.ValidationRequest)
	// conflicts are inputs whose lineage read answers an owner conflict
	// with that SettlementInputConflictFact@1 quadruple (until removed).
	conflicts map[billingc.SettlementInput]strict.Quadruple
}

func newFakeMetering() *fakeMetering {
	return &fakeMetering{chain: map[string][]billingc.SettlementInput{}, targets: map[billingc.SettlementInput]string{},
		answers: map[string]catchup.Validation{}, ops: map[string]int{}, asked: map[string]map[string]bool{},
		conflicts: map[billingc.SettlementInput]strict.Quadruple{}}
}

// append makes version v (target amount) of d current in Metering.
func (m *fakeMetering) append(d billingc.SettlementDimension, v int64, target string) billingc.SettlementInput {
	m.mu.Lock()
	defer m.mu.Unlock()
	in := settlementInputOf(d, v)
	m.chain[d.SettlementDimensionID()] = append(m.chain[d.SettlementDimensionID()], in)
	m.targets[in] = target
	return in
}

func (m *fakeMetering) ValidateSettlementInputCurrent(_ context.Context, req catchup.ValidationRequest) (catchup.Validation, error) {
	if hook := m.beforeValidate; hook != nil {
		hook(req)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	key := req.Purpose + "|" + req.OperationID
	m.ops[req.OperationID]++
	if m.asked[req.OperationID] == nil {
		m.asked[req.OperationID] = map[string]bool{}
	}
	m.asked[req.OperationID][fmt.Sprintf("%s|%s|%d|%s", req.Purpose, req.Input.Snapshot.Ref, req.Input.StateVersion, req.BasisDigest)] = true
	if a, ok := m.answers[key]; ok {
		return a, nil
	}
	chain := m.chain[req.SettlementDimensionID]
	if len(chain) == 0 {
		return catchup.Validation{}, errors.New("fake metering: no settlement input")
	}
	cur := chain[len(chain)-1]
	a := catchup.Validation{Current: cur == req.Input, CurrentInput: cur, Receipt: cquad("mvr-" + req.Purpose + "-" + req.OperationID)}
	m.answers[key] = a
	return a, nil
}

// notSettleable marks an input Metering reports as reconciliation required.
const notSettleable = "not-settleable"

// reused lists the operations asked with more than one distinct request.
func (m *fakeMetering) reused() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for op, reqs := range m.asked {
		if len(reqs) > 1 {
			out = append(out, op)
		}
	}
	return out
}

func (m *fakeMetering) SettlementInputTarget(_ context.Context, _ string, in billingc.SettlementInput) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if fact, ok := m.conflicts[in]; ok {
		return "", &catchup.SettlementInputOwnerConflictError{Fact: fact, Detail: "fake metering: lineage conflict at " + in.Snapshot.Ref}
	}
	t, ok := m.targets[in]
	if !ok {
		return "", fmt.Errorf("fake metering: unknown input %s", in.Snapshot.Ref)
	}
	if t == notSettleable {
		return "", fmt.Errorf("%w: %s", catchup.ErrSettlementInputNotSettleable, in.Snapshot.Ref)
	}
	return t, nil
}

// fakeLedger records the transitions posted; fail makes the next post fail.
type fakeLedger struct {
	mu     sync.Mutex
	posted []string
	fail   atomic.Bool
}

var errLedgerDown = errors.New("ledger posting failed")

func (l *fakeLedger) PostSettlementTransitionTx(_ context.Context, _ pgx.Tx, t *billingc.BillingSettlementTransition) error {
	if l.fail.Load() {
		return errLedgerDown
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.posted = append(l.posted, t.TransitionKind+":"+t.TransitionAmount)
	return nil
}

type catchUpBundle struct {
	admin        *pgxpool.Pool // the migrating superuser (fixtures, assertions)
	pool         *pgxpool.Pool // oceanway_billing: the consumer, the worker, the fence opening
	consumer     *catchup.Consumer
	finalization *fakeFinalization
	metering     *fakeMetering
	ledger       *fakeLedger
	worker       *catchup.Worker
}

func catchUpLines() []migrate.Line {
	return []migrate.Line{outboxschema.Line(), admissionschema.Line(), billingschema.Line()}
}

func setupCatchUp(t *testing.T) *catchUpBundle {
	t.Helper()
	dbs := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}, Lines: catchUpLines(), MaxConns: 10})
	admin := dbs.Core()
	_, err := release.Bootstrap(t.Context(), admin, release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1, SourceRelease: "test"})
	require.NoError(t, err)
	pool := dbtest.RolePool(t, dbs.DSNs[boundary.Core], billingschema.RoleBilling)
	b := &catchUpBundle{admin: admin, pool: pool, finalization: newFakeFinalization(), metering: newFakeMetering(), ledger: &fakeLedger{}}
	b.consumer, err = catchup.NewConsumer(pool, catchup.ConsumerConfig{Inbox: inbox.Config{LockTimeout: time.Second}, Finalization: b.finalization})
	require.NoError(t, err)
	b.worker, err = catchup.NewWorker(pool, catchup.WorkerConfig{Metering: b.metering, Ledger: b.ledger,
		Now: func() time.Time { return catchUpAt.Add(time.Hour) }})
	require.NoError(t, err)
	return b
}

// finalize opens d's catch-up fence as the successful finalization does,
// settling input v1 at amount.
func (b *catchUpBundle) finalize(t *testing.T, amount string, dims ...billingc.SettlementDimension) {
	t.Helper()
	p := catchup.OpenParams{Tenant: catchUpTenant, CorrelationID: cid("correlation", dims[0].BillingReservationID),
		FinalizationCommitted: cquad("bfc-" + dims[0].BillingReservationID), FinalizationEventID: cid("finalization-event", dims[0].BillingReservationID),
		Now: catchUpAt.Add(30 * time.Minute)}
	for _, d := range dims {
		p.Dimensions = append(p.Dimensions, catchup.OpenDimension{Dimension: d, SettledInput: settlementInputOf(d, 1), SettledAmount: amount})
	}
	require.NoError(t, db.WithTx(t.Context(), b.pool, func(ctx context.Context, tx pgx.Tx) error {
		return openAsFinalization(ctx, tx, p)
	}))
}

// ack delivers e and returns the decoded receipt.
func (b *catchUpBundle) ack(t *testing.T, e *envelope.Envelope) *receipt.BillingSettlementCatchUpConsumerReceipt {
	t.Helper()
	res, err := b.consumer.Consume(t.Context(), catchUpDelivery(e))
	require.NoError(t, err)
	r, err := receipt.DecodeBillingSettlementCatchUpConsumerReceipt(res.ReceiptBody)
	require.NoError(t, err)
	require.NoError(t, r.VerifyDigest())
	return r
}

// drain steps the worker until no fence is pending (bounded).
func (b *catchUpBundle) drain(t *testing.T) map[string]int {
	t.Helper()
	total := map[string]int{}
	for range 20 {
		steps, err := b.worker.RunOnce(t.Context())
		require.NoError(t, err)
		if len(steps) == 0 {
			return total
		}
		for k, v := range steps {
			total[k] += v
		}
	}
	t.Fatalf("catch-up did not settle: %v", total)
	return nil
}

type catchUpFenceState struct {
	Revision, StateRevision, Generation, LastEvaluated int64
	State, Settled                                     string
}

func (b *catchUpBundle) fence(t *testing.T, d billingc.SettlementDimension) catchUpFenceState {
	t.Helper()
	var f catchUpFenceState
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT fence_revision, settlement_state_revision, active_work_generation,
		last_evaluated_state_version, coordination_state, settled_amount::text FROM billing.settlement_catch_up_fences
		WHERE settlement_dimension_id = $1`, d.SettlementDimensionID()).
		Scan(&f.Revision, &f.StateRevision, &f.Generation, &f.LastEvaluated, &f.State, &f.Settled))
	return f
}

// transitions lists d's transitions as "from>to kind amount".
func (b *catchUpBundle) transitions(t *testing.T, d billingc.SettlementDimension) []string {
	t.Helper()
	rows, err := b.admin.Query(t.Context(), `SELECT concat(from_settlement_state_revision, '>', to_settlement_state_revision, ' ',
		transition_kind, ' ', transition_amount::text, ' v', settlement_input_state_version) FROM billing.settlement_transitions
		WHERE settlement_dimension_id = $1 ORDER BY from_settlement_state_revision`, d.SettlementDimensionID())
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// openAsFinalization opens the catch-up fences as the finalization's
// transaction does: under the reservation's finalization fence lock.
func openAsFinalization(ctx context.Context, tx pgx.Tx, p catchup.OpenParams) error {
	if _, err := tx.Exec(ctx, finalizationFenceLock, p.Dimensions[0].Dimension.BillingReservationID); err != nil {
		return err
	}
	return catchup.OpenFencesTx(ctx, tx, p)
}
