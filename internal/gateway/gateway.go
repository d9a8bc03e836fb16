// Package gateway is the Gateway owner (ADR-031 "两种执行分支都必须显式",
// GW-1, GW-2) over the gateway database:
//
//   - Dispatch reserves the one dispatch slot of an attempt + gateway
//     deployment + attempt manifest quadruple and, in the same transaction,
//     advances it to bound (unique AttemptRouteBinding@1 +
//     GatewayRouteSnapshot@1) or terminal_rejected
//     (GatewayPreBindingRejectionFact@1). Both states absorb and exclude
//     each other; a retry returns the original reply byte for byte.
//   - Observe advances one attempt-bound availability Current chain
//     (attempt, deployment, evidence kind, dimension): immutable evidence (if
//     any), the snapshot with a dense state version from 1, the pointer CAS,
//     gateway.evidence-availability.current-changed@1 and its metering
//     delivery, in one transaction. A slot that is not bound has no chain, so
//     a pre-binding state never produces the event.
//   - ReadDispatchSlot is readDispatchSlot@1, the Execution owner's proof
//     of terminal_rejected before AttemptNotDispatchedFact@1.
//
// Providers plug in behind Provider; package simprovider is the
// deterministic simulated one the demo and the tests use.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/gateway/dbsqlc"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
	"github.com/oceanway/core/internal/release"
)

var queries = dbsqlc.New()

// SQLSTATEs the gateway schema raises (schema/migrations/00001); tests assert
// them as the least-privileged role would meet them.
const (
	CodeImmutable             = "GW001" // update, delete or truncate of an immutable gateway fact (truncate: 00005, every role)
	CodeIllegalSlotTransition = "GW002" // a slot change other than reserved → bound | terminal_rejected
	CodeSlotNotBound          = "GW003" // availability for a slot that is not bound
	CodeChainNotDense         = "GW004" // an availability chain not advancing by exactly one
	// Finality guards (migration 00005, issue 30).
	CodeSnapshotContent     = "GW005" // an availability snapshot whose columns, slot, binding, evidence or predecessor differ from its stored body
	CodeAdvanceWithoutEvent = "GW006" // an availability advance without its current-changed event in the same transaction
	CodeSnapshotNotHead     = "GW007" // an availability snapshot that is not its chain's head at COMMIT of its own transaction
	CodeReceiptNotHead      = "GW008" // a validation receipt whose current/not_current is not the truth at insert, or whose body differs from its row
	CodeSlotNotAtomic       = "GW009" // a slot not born reserved, or still reserved at COMMIT of its reserving transaction
	CodeTerminalFact        = "GW010" // a binding, route snapshot or rejection that does not describe its slot, or a terminal slot without its fact
	CodeConflictFactForged  = "GW011" // an evidence conflict fact whose body differs from its row or from the evidence it contests, or repeats its quantity
)

// Errors. Bad input is refused with nothing written.
var (
	ErrInvalidDispatch = errors.New("gateway: invalid dispatch request")
	// ErrSlotKeyConflict: the attempt's slot exists under another deployment or manifest.
	ErrSlotKeyConflict = errors.New("gateway: dispatch slot exists with another key")
	ErrSlotNotFound    = errors.New("gateway: dispatch slot not found")
	// ErrNotBound: availability is only recorded for a bound slot.
	ErrNotBound           = errors.New("gateway: slot is not bound")
	ErrInvalidObservation = errors.New("gateway: invalid observation")
	// ErrChainMoved: another advance of the same chain committed first (retry).
	ErrChainMoved = errors.New("gateway: availability chain moved concurrently")
	// ErrEvidenceConflictDiffers: the evidence already has a stored
	// GatewayEvidenceConflictFact@1 with another conflicting quantity
	// (insert-or-compare on the contested evidence); nothing is written.
	ErrEvidenceConflictDiffers = errors.New("gateway: the evidence already has another conflict fact")
)

// ReasonReportDisputed is the reason code of the availability the Gateway
// advances to when the provider contradicts the current evidence (the same
// report id with another quantity): the chain still cites the evidence, and
// its GatewayEvidenceConflictFact@1 makes readGatewayProviderEvidence answer
// conflicting, until a corrected report advances the chain again.
const ReasonReportDisputed = "provider_report_disputed"

// Decision is a provider adapter's routing decision, taken before any
// provider side effect: a route, or a deterministic rejection reason.
type Decision struct {
	Route        *contract.Route
	RejectReason string
}

// Observation is one report about an attempt's evidence: the state of one
// (kind, dimension) and, when available, the reported quantity.
type Observation struct {
	EvidenceKind string
	DimensionKey string
	State        string
	ReasonCode   string
	Quantity     string // available only
	ReportID     string // available only
}

// Provider is a provider adapter behind the Gateway.
type Provider interface {
	// Route decides before any side effect (deterministic for an attempt).
	Route(m *contract.AttemptExecutionManifest) Decision
	// Execute performs the provider call of a bound attempt and returns the
	// evidence observations in the order the provider reports them.
	Execute(ctx context.Context, b *contract.AttemptRouteBinding) ([]Observation, error)
}

// Hooks let tests fail a transaction after a given step.
type Hooks struct {
	AfterStep func(ctx context.Context, tx pgx.Tx, step string) error
}

// Pool is the gateway database (a *pgxpool.Pool).
type Pool interface {
	db.Beginner
	db.Executor
}

// Service is the Gateway owner.
type Service struct {
	pool  Pool
	hooks Hooks
}

// New builds the Gateway owner over the gateway database.
func New(pool Pool) *Service { return &Service{pool: pool} }

// SetHooks installs test hooks.
func (s *Service) SetHooks(h Hooks) { s.hooks = h }

func (s *Service) step(ctx context.Context, tx pgx.Tx, name string) error {
	if s.hooks.AfterStep == nil {
		return nil
	}
	if err := s.hooks.AfterStep(ctx, tx, name); err != nil {
		return fmt.Errorf("gateway step %s: %w", name, err)
	}
	return nil
}

// DispatchRequest asks the Gateway to dispatch an attempt: the attempt's
// manifest body (decoded strictly, its digest recomputed), the run's tenant
// and the adapter's decision.
type DispatchRequest struct {
	Tenant       contract.Tenant
	ManifestBody []byte
	Decision     Decision
}

// Reply is a slot's terminal answer; Body is its canonical bytes.
type Reply struct {
	Body          []byte
	State         string
	Binding       strict.Quadruple
	RouteSnapshot strict.Quadruple
	Rejection     strict.Quadruple
	ReasonCode    string
	// Replayed is true when the slot was terminal already.
	Replayed bool
}

func replyBody(key contract.SlotKey, r Reply) ([]byte, error) {
	m := map[string]any{"executionAttemptId": key.ExecutionAttemptID, "gatewayDeploymentId": key.GatewayDeploymentID, "state": r.State}
	key.AttemptManifest.Put(m, contract.PrefixAttemptExecutionManifest)
	if r.State == gatewayread.SlotBound {
		r.Binding.Put(m, contract.PrefixAttemptRouteBinding)
		r.RouteSnapshot.Put(m, contract.PrefixGatewayRouteSnapshot)
	} else {
		r.Rejection.Put(m, contract.PrefixGatewayPreBindingRejectionFact)
		m["rejectionReasonCode"] = r.ReasonCode
	}
	return jcs.Marshal(m)
}

func parseReply(body []byte) (Reply, error) {
	v, err := jcs.Parse(body)
	if err != nil {
		return Reply{}, err
	}
	m, _ := v.(map[string]any)
	q := func(prefix string) strict.Quadruple {
		f := strict.Fields(prefix)
		s := func(k string) string { x, _ := m[k].(string); return x }
		return strict.Quadruple{Ref: s(f[0]), SchemaVersion: s(f[1]), DigestAlgorithmVersion: digest.Algorithm(s(f[2])), Digest: s(f[3])}
	}
	r := Reply{Body: body}
	r.State, _ = m["state"].(string)
	if r.State == gatewayread.SlotBound {
		r.Binding, r.RouteSnapshot = q(contract.PrefixAttemptRouteBinding), q(contract.PrefixGatewayRouteSnapshot)
	} else {
		r.Rejection = q(contract.PrefixGatewayPreBindingRejectionFact)
		r.ReasonCode, _ = m["rejectionReasonCode"].(string)
	}
	return r, nil
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Dispatch reserves the attempt's slot and advances it to bound or
// terminal_rejected in one transaction (GW-1). When the slot is terminal
// already it returns the stored reply byte for byte, whatever the new
// request's decision.
func (s *Service) Dispatch(ctx context.Context, req DispatchRequest) (Reply, error) {
	m, err := contract.DecodeAttemptExecutionManifest(req.ManifestBody)
	if err != nil {
		return Reply{}, fmt.Errorf("%w: attempt manifest: %w", ErrInvalidDispatch, err)
	}
	switch {
	case req.Tenant.Kind == "" || !strict.IsUUID(req.Tenant.TenantID) || !strict.IsUUID(req.Tenant.WorkspaceID):
		return Reply{}, fmt.Errorf("%w: tenant is incomplete", ErrInvalidDispatch)
	case (req.Decision.Route == nil) == (req.Decision.RejectReason == ""):
		return Reply{}, fmt.Errorf("%w: a decision is a route or a rejection reason", ErrInvalidDispatch)
	}
	key := contract.SlotKey{ExecutionAttemptID: m.ExecutionAttemptID, GatewayDeploymentID: m.GatewayDeploymentID, AttemptManifest: m.Manifest}
	canonical, err := jcs.Canonicalize(req.ManifestBody)
	if err != nil {
		return Reply{}, fmt.Errorf("%w: %w", ErrInvalidDispatch, err)
	}
	return db.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Reply, error) {
		now := time.Now().UTC().Truncate(time.Microsecond)
		mq := m.Manifest
		n, err := queries.SlotReserve(ctx, tx, dbsqlc.SlotReserveParams{
			ExecutionAttemptID: m.ExecutionAttemptID, GatewayDeploymentID: m.GatewayDeploymentID,
			AttemptExecutionManifestRef: mq.Ref, AttemptExecutionManifestSchemaVersion: mq.SchemaVersion,
			AttemptExecutionManifestDigestAlgorithmVersion: string(mq.DigestAlgorithmVersion), AttemptExecutionManifestDigest: mq.Digest,
			RunID: m.RunID, RunStepID: m.RunStepID, TenantKind: req.Tenant.Kind, TenantID: req.Tenant.TenantID,
			WorkspaceID: req.Tenant.WorkspaceID, ProjectID: nullable(req.Tenant.ProjectID), ManifestBody: string(canonical), ReservedAt: now,
		})
		if err != nil {
			return Reply{}, fmt.Errorf("reserve slot %s: %w", m.ExecutionAttemptID, err)
		}
		if err := s.step(ctx, tx, "reserve"); err != nil {
			return Reply{}, err
		}
		slot, err := queries.SlotForUpdate(ctx, tx, m.ExecutionAttemptID)
		if err != nil {
			return Reply{}, fmt.Errorf("lock slot %s: %w", m.ExecutionAttemptID, err)
		}
		// guard GW-1.slot-key-conflict
		if slotKey(slot) != key {
			return Reply{}, fmt.Errorf("dispatch %s: %w", m.ExecutionAttemptID, ErrSlotKeyConflict)
		}
		if n == 0 && slot.State != gatewayread.SlotReserved {
			r, err := parseReply([]byte(*slot.ReplyBody))
			if err != nil {
				return Reply{}, fmt.Errorf("stored reply of %s: %w", m.ExecutionAttemptID, err)
			}
			r.Replayed = true
			return r, nil
		}
		if req.Decision.Route != nil {
			return s.bindTx(ctx, tx, key, m, *req.Decision.Route, now)
		}
		return s.rejectTx(ctx, tx, key, req.Decision.RejectReason, now)
	})
}

func slotKey(r dbsqlc.GatewayDispatchSlot) contract.SlotKey {
	return contract.SlotKey{ExecutionAttemptID: r.ExecutionAttemptID, GatewayDeploymentID: r.GatewayDeploymentID,
		AttemptManifest: strict.Quadruple{Ref: r.AttemptExecutionManifestRef, SchemaVersion: r.AttemptExecutionManifestSchemaVersion,
			DigestAlgorithmVersion: digest.Algorithm(r.AttemptExecutionManifestDigestAlgorithmVersion), Digest: r.AttemptExecutionManifestDigest}}
}

func (s *Service) bindTx(ctx context.Context, tx pgx.Tx, key contract.SlotKey, m *contract.AttemptExecutionManifest, route contract.Route, now time.Time) (Reply, error) {
	rs := &contract.GatewayRouteSnapshot{Snapshot: strict.Quadruple{Ref: "grs-" + key.ExecutionAttemptID}, SlotKey: key,
		RoutingPolicyRevision: m.RoutingPolicyRevision, Route: route, CapturedAt: now}
	rsBody, err := contract.Seal(rs)
	if err != nil {
		return Reply{}, fmt.Errorf("%w: route: %w", ErrInvalidDispatch, err)
	}
	q := rs.Snapshot
	if err := queries.RouteSnapshotInsert(ctx, tx, dbsqlc.RouteSnapshotInsertParams{
		GatewayRouteSnapshotRef: q.Ref, GatewayRouteSnapshotSchemaVersion: q.SchemaVersion,
		GatewayRouteSnapshotDigestAlgorithmVersion: string(q.DigestAlgorithmVersion), GatewayRouteSnapshotDigest: q.Digest,
		ExecutionAttemptID: key.ExecutionAttemptID, SnapshotBody: string(rsBody), CapturedAt: now,
	}); err != nil {
		return Reply{}, fmt.Errorf("insert route snapshot: %w", err)
	}
	if err := s.step(ctx, tx, "route_snapshot"); err != nil {
		return Reply{}, err
	}
	b := &contract.AttemptRouteBinding{Binding: strict.Quadruple{Ref: "arb-" + key.ExecutionAttemptID}, SlotKey: key, RouteSnapshot: q, Route: route, BoundAt: now}
	bBody, err := contract.Seal(b)
	if err != nil {
		return Reply{}, fmt.Errorf("seal binding: %w", err)
	}
	bq := b.Binding
	if err := queries.BindingInsert(ctx, tx, dbsqlc.BindingInsertParams{
		AttemptRouteBindingRef: bq.Ref, AttemptRouteBindingSchemaVersion: bq.SchemaVersion,
		AttemptRouteBindingDigestAlgorithmVersion: string(bq.DigestAlgorithmVersion), AttemptRouteBindingDigest: bq.Digest,
		ExecutionAttemptID: key.ExecutionAttemptID, GatewayRouteSnapshotRef: q.Ref, BindingBody: string(bBody), BoundAt: now,
	}); err != nil {
		return Reply{}, fmt.Errorf("insert binding: %w", err)
	}
	if err := s.step(ctx, tx, "binding"); err != nil {
		return Reply{}, err
	}
	return s.terminate(ctx, tx, key, Reply{State: gatewayread.SlotBound, Binding: bq, RouteSnapshot: q}, now)
}

func (s *Service) rejectTx(ctx context.Context, tx pgx.Tx, key contract.SlotKey, reason string, now time.Time) (Reply, error) {
	f := &contract.GatewayPreBindingRejectionFact{Fact: strict.Quadruple{Ref: "gpr-" + key.ExecutionAttemptID}, SlotKey: key, ReasonCode: reason, RejectedAt: now}
	body, err := contract.Seal(f)
	if err != nil {
		return Reply{}, fmt.Errorf("%w: rejection: %w", ErrInvalidDispatch, err)
	}
	q := f.Fact
	if err := queries.RejectionInsert(ctx, tx, dbsqlc.RejectionInsertParams{
		GatewayPreBindingRejectionFactRef: q.Ref, GatewayPreBindingRejectionFactSchemaVersion: q.SchemaVersion,
		GatewayPreBindingRejectionFactDigestAlgorithmVersion: string(q.DigestAlgorithmVersion), GatewayPreBindingRejectionFactDigest: q.Digest,
		ExecutionAttemptID: key.ExecutionAttemptID, RejectionReasonCode: reason, FactBody: string(body), RejectedAt: now,
	}); err != nil {
		return Reply{}, fmt.Errorf("insert rejection: %w", err)
	}
	if err := s.step(ctx, tx, "rejection"); err != nil {
		return Reply{}, err
	}
	return s.terminate(ctx, tx, key, Reply{State: gatewayread.SlotTerminalRejected, Rejection: q, ReasonCode: reason}, now)
}

func (s *Service) terminate(ctx context.Context, tx pgx.Tx, key contract.SlotKey, r Reply, now time.Time) (Reply, error) {
	body, err := replyBody(key, r)
	if err != nil {
		return Reply{}, err
	}
	body2 := string(body)
	n, err := queries.SlotTerminate(ctx, tx, dbsqlc.SlotTerminateParams{ExecutionAttemptID: key.ExecutionAttemptID, State: r.State, ReplyBody: &body2, TerminalAt: &now})
	if err != nil {
		return Reply{}, fmt.Errorf("advance slot: %w", err)
	}
	if n != 1 {
		return Reply{}, fmt.Errorf("advance slot %s: not reserved", key.ExecutionAttemptID)
	}
	if err := s.step(ctx, tx, "slot"); err != nil {
		return Reply{}, err
	}
	r.Body = body
	return r, nil
}

// Advance is one committed availability advance (or the unchanged current).
type Advance struct {
	Snapshot  *contract.AvailabilitySnapshot
	Body      []byte
	Evidence  *contract.ProviderEvidence
	EventID   string
	Unchanged bool
	// Conflict is the evidence conflict fact an observation that
	// contradicted the current evidence stored (or found stored).
	Conflict *contract.GatewayEvidenceConflictFact
}

// Observe records one observation of a bound attempt (GW-2). An
// observation equal to the current state (same state and same evidence
// content) changes nothing.
func (s *Service) Observe(ctx context.Context, attemptID string, o Observation) (Advance, error) {
	if err := validObservation(attemptID, o); err != nil {
		return Advance{}, err
	}
	res, err := db.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Advance, error) {
		return s.observeTx(ctx, tx, attemptID, o)
	})
	if err != nil {
		if db.SQLState(err) == pgerrcode.UniqueViolation {
			return Advance{}, fmt.Errorf("observe %s: %w: %w", attemptID, ErrChainMoved, err)
		}
		return Advance{}, outbox.TranslateError(err)
	}
	return res, nil
}

func validObservation(attemptID string, o Observation) error {
	known := false
	for _, st := range contract.AvailabilityStates {
		known = known || st == o.State
	}
	switch {
	case !strict.IsUUID(attemptID):
		return fmt.Errorf("%w: attempt %q", ErrInvalidObservation, attemptID)
	case o.EvidenceKind != contract.EvidenceProviderUsage && o.EvidenceKind != contract.EvidenceProviderCost:
		return fmt.Errorf("%w: evidence kind %q", ErrInvalidObservation, o.EvidenceKind)
	case !known:
		return fmt.Errorf("%w: state %q", ErrInvalidObservation, o.State)
	case (o.State == contract.AvailabilityAvailable) != (o.Quantity != ""):
		return fmt.Errorf("%w: a quantity is reported exactly when available", ErrInvalidObservation)
	}
	return nil
}

func (s *Service) observeTx(ctx context.Context, tx pgx.Tx, attemptID string, o Observation) (Advance, error) {
	slot, err := queries.SlotForShare(ctx, tx, attemptID)
	if err != nil {
		if errors.Is(db.NotFound(err), db.ErrNotFound) {
			return Advance{}, fmt.Errorf("observe %s: %w", attemptID, ErrSlotNotFound)
		}
		return Advance{}, fmt.Errorf("observe %s: lock slot: %w", attemptID, err)
	}
	if slot.State != gatewayread.SlotBound {
		return Advance{}, fmt.Errorf("observe %s: %w (%s)", attemptID, ErrNotBound, slot.State)
	}
	bodies, err := queries.BindingByAttempt(ctx, tx, attemptID)
	if err != nil {
		return Advance{}, fmt.Errorf("observe %s: binding: %w", attemptID, err)
	}
	binding, err := contract.DecodeAttemptRouteBinding([]byte(bodies.BindingBody))
	if err != nil {
		return Advance{}, fmt.Errorf("observe %s: stored binding: %w", attemptID, err)
	}
	key := slotKey(slot)
	chainID := envelope.GatewayAvailabilityChainID(attemptID, key.GatewayDeploymentID, o.EvidenceKind, o.DimensionKey)
	now := time.Now().UTC().Truncate(time.Microsecond)

	var pred *contract.AvailabilitySnapshot
	cur, err := queries.CurrentForUpdate(ctx, tx, chainID)
	switch {
	case err == nil:
		if pred, err = contract.DecodeAvailabilitySnapshot([]byte(cur.SnapshotBody)); err != nil {
			return Advance{}, fmt.Errorf("observe %s: stored current: %w", attemptID, err)
		}
	case !errors.Is(db.NotFound(err), db.ErrNotFound):
		return Advance{}, fmt.Errorf("observe %s: lock current: %w", attemptID, err)
	}

	var ev *contract.ProviderEvidence
	var disputed *contract.GatewayEvidenceConflictFact
	if o.State == contract.AvailabilityAvailable && pred != nil && pred.State == contract.AvailabilityAvailable {
		if disputed, err = s.disputeTx(ctx, tx, pred, o, now); err != nil {
			return Advance{}, err
		}
		if disputed != nil && pred.ReasonCode == ReasonReportDisputed {
			return Advance{Snapshot: pred, Body: []byte(cur.SnapshotBody), Unchanged: true, Conflict: disputed}, nil
		}
	}
	reason := o.ReasonCode
	if disputed != nil {
		reason = ReasonReportDisputed
	} else if o.State == contract.AvailabilityAvailable {
		ev = &contract.ProviderEvidence{Evidence: strict.Quadruple{Ref: "gpe-" + uuid.NewString()}, ExecutionAttemptID: attemptID,
			GatewayDeploymentID: key.GatewayDeploymentID, Binding: binding.Binding, EvidenceKind: o.EvidenceKind,
			DimensionKey: o.DimensionKey, Quantity: o.Quantity, ProviderReportID: o.ReportID, ObservedAt: now}
	}
	if disputed == nil && pred != nil && pred.State == o.State && pred.ReasonCode == o.ReasonCode && sameEvidence(ctx, tx, pred.Evidence, ev) {
		return Advance{Snapshot: pred, Body: []byte(cur.SnapshotBody), Unchanged: true}, nil
	}
	var evBody []byte
	if ev != nil {
		if evBody, err = contract.Seal(ev); err != nil {
			return Advance{}, fmt.Errorf("%w: evidence: %w", ErrInvalidObservation, err)
		}
		q := ev.Evidence
		if err := queries.EvidenceInsert(ctx, tx, dbsqlc.EvidenceInsertParams{
			ProviderEvidenceRef: q.Ref, ProviderEvidenceSchemaVersion: q.SchemaVersion,
			ProviderEvidenceDigestAlgorithmVersion: string(q.DigestAlgorithmVersion), ProviderEvidenceDigest: q.Digest,
			ExecutionAttemptID: attemptID, ProviderEvidenceKind: o.EvidenceKind, EvidenceDimensionKey: o.DimensionKey,
			EvidenceBody: string(evBody), ObservedAt: now,
		}); err != nil {
			return Advance{}, fmt.Errorf("insert evidence: %w", err)
		}
		if err := s.step(ctx, tx, "evidence"); err != nil {
			return Advance{}, err
		}
	}
	snap := &contract.AvailabilitySnapshot{Snapshot: strict.Quadruple{Ref: "gas-" + uuid.NewString()}, SlotKey: key,
		Binding: binding.Binding, RouteSnapshot: binding.RouteSnapshot, EvidenceKind: o.EvidenceKind, DimensionKey: o.DimensionKey,
		State: o.State, ReasonCode: reason, StateVersion: 1, RecordedAt: now}
	if pred != nil {
		snap.StateVersion, snap.Predecessor, snap.PredecessorStateVersion = pred.StateVersion+1, pred.Snapshot, pred.StateVersion
	}
	var evRef *string
	switch {
	case ev != nil:
		snap.Evidence = ev.Evidence
		evRef = &ev.Evidence.Ref
	case disputed != nil:
		// The disputed availability still cites the contested evidence.
		snap.Evidence = disputed.Evidence
		evRef = &disputed.Evidence.Ref
	}
	body, err := contract.Seal(snap)
	if err != nil {
		return Advance{}, fmt.Errorf("%w: snapshot: %w", ErrInvalidObservation, err)
	}
	eventID := outbox.NewEventIDs(1)[0]
	q := snap.Snapshot
	if err := queries.SnapshotInsert(ctx, tx, dbsqlc.SnapshotInsertParams{
		CurrentAvailabilityRef: q.Ref, CurrentAvailabilitySchemaVersion: q.SchemaVersion,
		CurrentAvailabilityDigestAlgorithmVersion: string(q.DigestAlgorithmVersion), CurrentAvailabilityDigest: q.Digest,
		ChainID: chainID, ExecutionAttemptID: attemptID, StateVersion: snap.StateVersion, AvailabilityState: o.State,
		ProviderEvidenceRef: evRef, SnapshotBody: string(body), EventID: eventID, RecordedAt: now,
	}); err != nil {
		return Advance{}, fmt.Errorf("insert availability snapshot: %w", err)
	}
	if err := s.step(ctx, tx, "snapshot"); err != nil {
		return Advance{}, err
	}
	var n int64
	if pred == nil {
		n, err = queries.CurrentInsert(ctx, tx, dbsqlc.CurrentInsertParams{ChainID: chainID, ExecutionAttemptID: attemptID,
			GatewayDeploymentID: key.GatewayDeploymentID, ProviderEvidenceKind: o.EvidenceKind, EvidenceDimensionKey: o.DimensionKey,
			CurrentAvailabilityRef: q.Ref})
	} else {
		n, err = queries.CurrentCAS(ctx, tx, dbsqlc.CurrentCASParams{ChainID: chainID, CurrentAvailabilityRef: q.Ref, ExpectedStateVersion: pred.StateVersion})
	}
	if err != nil {
		return Advance{}, fmt.Errorf("advance availability pointer: %w", err)
	}
	if n != 1 {
		return Advance{}, fmt.Errorf("observe %s: %w", attemptID, ErrChainMoved)
	}
	if err := s.step(ctx, tx, "pointer"); err != nil {
		return Advance{}, err
	}
	p := envelope.GatewayEvidenceAvailabilityCurrentChangedV1Payload{
		ExecutionAttemptID: attemptID, GatewayDeploymentID: key.GatewayDeploymentID, ProviderEvidenceKind: o.EvidenceKind,
		EvidenceDimensionKey: o.DimensionKey, CurrentAvailabilityStateVersion: snap.StateVersion,
		AvailableEvidence: envelope.GatewayAvailableEvidenceV1{State: "none"},
	}
	p.SetAttemptExecutionManifest(key.AttemptManifest)
	p.SetAttemptRouteBinding(binding.Binding)
	p.SetGatewayRouteSnapshot(binding.RouteSnapshot)
	p.SetCurrentAvailability(q)
	if snap.Evidence.Ref != "" {
		e := snap.Evidence
		p.AvailableEvidence = envelope.GatewayAvailableEvidenceV1{State: "present", ProviderEvidenceRef: e.Ref, ProviderEvidenceSchemaVersion: e.SchemaVersion,
			ProviderEvidenceDigestAlgorithmVersion: string(e.DigestAlgorithmVersion), ProviderEvidenceDigest: e.Digest}
	}
	project := ""
	if slot.ProjectID != nil {
		project = *slot.ProjectID
	}
	env := envelope.Envelope{
		EventID: eventID, EventType: envelope.GatewayAvailabilityCurrentChangedV1, EventSchemaVersion: "1",
		AggregateType: envelope.AggregateGatewayAvailabilityChain, AggregateID: chainID, AggregateRevision: snap.StateVersion,
		TenantKind: slot.TenantKind, TenantID: slot.TenantID, WorkspaceID: slot.WorkspaceID, ProjectID: project,
		CorrelationID: slot.RunID, OperationID: envelope.DeriveID("gateway_availability_advance@1", map[string]any{"chainId": chainID, "stateVersion": snap.StateVersion}),
		OccurredAt: now, Payload: p.Map(),
	}
	if _, err := release.ForProducer(boundary.Gateway).AppendTx(ctx, tx, env); err != nil {
		return Advance{}, fmt.Errorf("append availability event: %w", err)
	}
	if err := s.step(ctx, tx, "append"); err != nil {
		return Advance{}, err
	}
	return Advance{Snapshot: snap, Body: body, Evidence: ev, EventID: eventID, Conflict: disputed}, nil
}

// disputeTx records, when o contradicts the current evidence (the same
// provider report id with another quantity), the Gateway's
// GatewayEvidenceConflictFact@1 about it — insert-or-compare on the
// evidence: the same conflict returns the stored fact, another conflicting
// quantity is ErrEvidenceConflictDiffers — and returns it; nil when o does
// not contradict the current evidence (a corrected report has a new report id).
func (s *Service) disputeTx(ctx context.Context, tx pgx.Tx, pred *contract.AvailabilitySnapshot, o Observation, now time.Time) (*contract.GatewayEvidenceConflictFact, error) {
	body, err := queries.EvidenceBodyByRef(ctx, tx, pred.Evidence.Ref)
	if err != nil {
		return nil, fmt.Errorf("observe: current evidence %s: %w", pred.Evidence.Ref, err)
	}
	old, err := contract.DecodeProviderEvidence([]byte(body))
	if err != nil {
		return nil, fmt.Errorf("observe: stored evidence %s: %w", pred.Evidence.Ref, err)
	}
	if old.ProviderReportID != o.ReportID || old.Quantity == o.Quantity {
		return nil, nil
	}
	f := &contract.GatewayEvidenceConflictFact{Fact: strict.Quadruple{Ref: "gec-" + uuid.NewString()}, ExecutionAttemptID: old.ExecutionAttemptID,
		GatewayDeploymentID: old.GatewayDeploymentID, Binding: old.Binding, EvidenceKind: old.EvidenceKind, DimensionKey: old.DimensionKey,
		Evidence: old.Evidence, ProviderReportID: old.ProviderReportID, ConflictingQuantity: o.Quantity,
		ReasonCode: contract.EvidenceConflictReportDisagrees, DetectedAt: now}
	fbody, err := contract.Seal(f)
	if err != nil {
		return nil, fmt.Errorf("%w: evidence conflict: %w", ErrInvalidObservation, err)
	}
	q := f.Fact
	if err := queries.EvidenceConflictInsert(ctx, tx, dbsqlc.EvidenceConflictInsertParams{
		GatewayEvidenceConflictFactRef: q.Ref, GatewayEvidenceConflictFactSchemaVersion: q.SchemaVersion,
		GatewayEvidenceConflictFactDigestAlgorithmVersion: string(q.DigestAlgorithmVersion), GatewayEvidenceConflictFactDigest: q.Digest,
		ProviderEvidenceRef: old.Evidence.Ref, ExecutionAttemptID: old.ExecutionAttemptID, FactBody: string(fbody), DetectedAt: now,
	}); err != nil {
		return nil, fmt.Errorf("insert evidence conflict: %w", err)
	}
	stored, _, err := EvidenceConflictOf(ctx, tx, old.Evidence.Ref)
	if err != nil {
		return nil, err
	}
	if stored == nil {
		return nil, fmt.Errorf("observe: evidence conflict of %s not stored", old.Evidence.Ref)
	}
	// guard GW-2.evidence-conflict-differs
	if stored.ConflictingQuantity != f.ConflictingQuantity || stored.ReasonCode != f.ReasonCode {
		return nil, fmt.Errorf("%w: %s (stored %s, reported %s)", ErrEvidenceConflictDiffers, old.Evidence.Ref, stored.ConflictingQuantity, f.ConflictingQuantity)
	}
	return stored, nil
}

// sameEvidence compares the current's evidence with a new observation's
// content (kind, dimension, quantity, report id).
func sameEvidence(ctx context.Context, tx pgx.Tx, current strict.Quadruple, ev *contract.ProviderEvidence) bool {
	if current.Ref == "" || ev == nil {
		return current.Ref == "" && ev == nil
	}
	var body string
	if err := tx.QueryRow(ctx, "SELECT evidence_body FROM gateway.provider_evidence WHERE provider_evidence_ref = $1", current.Ref).Scan(&body); err != nil {
		return false
	}
	old, err := contract.DecodeProviderEvidence([]byte(body))
	if err != nil {
		return false
	}
	return old.Quantity == ev.Quantity && old.ProviderReportID == ev.ProviderReportID
}

// ReadDispatchSlot answers readDispatchSlot@1: found with the slot's state
// (and, when terminal, the binding or the rejection read back and
// recomputed) only for the exact slot key; not_found when no slot exists;
// conflicting when the attempt's slot has another key or a stored object
// does not recompute.
func ReadDispatchSlot(ctx context.Context, q db.Executor, req gatewayread.DispatchSlotRead) (gatewayread.SlotResult, error) {
	switch {
	case req.ContractVersion != gatewayread.ReadDispatchSlotV1:
		return gatewayread.SlotResult{}, fmt.Errorf("%w: contract version %q", ownerread.ErrInvalidRequest, req.ContractVersion)
	case req.Audience != gatewayread.AudienceExecutionEligibility:
		return gatewayread.SlotResult{}, fmt.Errorf("%w: audience %q", ownerread.ErrInvalidRequest, req.Audience)
	case !strict.IsUUID(req.ExecutionAttemptID) || req.GatewayDeploymentID == "":
		return gatewayread.SlotResult{}, fmt.Errorf("%w: attempt and deployment are required", ownerread.ErrInvalidRequest)
	}
	if err := req.AttemptManifest.Validate(); err != nil {
		return gatewayread.SlotResult{}, fmt.Errorf("%w: %w", ownerread.ErrInvalidRequest, err)
	}
	slot, err := queries.SlotByAttempt(ctx, q, req.ExecutionAttemptID)
	if errors.Is(db.NotFound(err), db.ErrNotFound) {
		return ownerread.Missing[gatewayread.DispatchSlot](), nil
	}
	if err != nil {
		return gatewayread.SlotResult{}, fmt.Errorf("read slot %s: %w", req.ExecutionAttemptID, err)
	}
	want := contract.SlotKey{ExecutionAttemptID: req.ExecutionAttemptID, GatewayDeploymentID: req.GatewayDeploymentID, AttemptManifest: req.AttemptManifest}
	if slotKey(slot) != want {
		return ownerread.Conflict[gatewayread.DispatchSlot]("the attempt's slot has another deployment or manifest"), nil
	}
	out := gatewayread.DispatchSlot{State: slot.State}
	switch slot.State {
	case gatewayread.SlotBound:
		b, err := queries.BindingByAttempt(ctx, q, req.ExecutionAttemptID)
		if err != nil {
			return gatewayread.SlotResult{}, fmt.Errorf("read binding %s: %w", req.ExecutionAttemptID, err)
		}
		bind, err := contract.DecodeAttemptRouteBinding([]byte(b.BindingBody))
		if err != nil || bind.SlotKey != want {
			return ownerread.Conflict[gatewayread.DispatchSlot]("stored binding does not recompute or names another slot"), nil
		}
		out.Binding, out.RouteSnapshot = bind.Binding, bind.RouteSnapshot
	case gatewayread.SlotTerminalRejected:
		body, err := queries.RejectionByAttempt(ctx, q, req.ExecutionAttemptID)
		if err != nil {
			return gatewayread.SlotResult{}, fmt.Errorf("read rejection %s: %w", req.ExecutionAttemptID, err)
		}
		f, err := contract.DecodeGatewayPreBindingRejectionFact([]byte(body))
		if err != nil || f.SlotKey != want {
			return ownerread.Conflict[gatewayread.DispatchSlot]("stored rejection does not recompute or names another slot"), nil
		}
		out.Rejection, out.RejectionReasonCode, out.RejectionBody = f.Fact, f.ReasonCode, []byte(body)
	}
	return ownerread.FoundWith(out, nil), nil
}
