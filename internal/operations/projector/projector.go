package projector

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/operations/projector/dbsqlc"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/ownerread/coreread"
)

// ProjectionName is the name of the Operations read-model projection; the
// core_operations members of a Delivery Set Definition freeze it with a
// version.
const ProjectionName = "operations_read_model"

// Error codes of the projector (normalized, low cardinality).
const (
	// CodeRevisionGapWait: recoverable wait for a missing aggregate revision (OPS-2).
	CodeRevisionGapWait = "revision_gap_wait"
	// CodeUnsupportedPair: a core_operations pair this release does not project yet.
	CodeUnsupportedPair = "projector_pair_unsupported"
	// CodeProjectionUnsupported: the frozen member targets a projection this binary cannot build.
	CodeProjectionUnsupported = "projection_version_unsupported"
	// CodePairNotRouted: a pair that is not a core_operations pair at all.
	CodePairNotRouted = "pair_not_routed_to_consumer"
	// CodeRevisionConflict: two events claim one aggregate revision.
	CodeRevisionConflict = "aggregate_revision_conflict"
	// CodeLinkConflict: Run and Reservation fail the causal/equality checks (OPS-3).
	CodeLinkConflict = "reservation_link_conflict"
	// CodeFinalizationConflict: a finalization disagrees with its reservation.
	CodeFinalizationConflict = "finalization_reservation_conflict"
	// CodeOwnerReadUnavailable: the Billing owner read is not reachable (CON-2).
	CodeOwnerReadUnavailable = "owner_read_unavailable"
	// CodeOwnerFactNotReadable: the owner read does not (yet) find the fact.
	CodeOwnerFactNotReadable = "owner_fact_not_readable"
	// CodeOwnerFactConflicting: the owner read contradicts the event.
	CodeOwnerFactConflicting = "owner_fact_conflicting"
)

// Typed reasons wrapped by the projector's classified errors.
var (
	ErrRevisionGap           = errors.New("projector: aggregate revision gap")
	ErrRevisionConflict      = errors.New("projector: another event already holds this aggregate revision")
	ErrLinkConflict          = errors.New("projector: run and reservation fail the causal/equality checks")
	ErrFinalizationConflict  = errors.New("projector: finalization disagrees with its reservation")
	ErrUnsupportedPair       = errors.New("projector: event pair not projected by this release")
	ErrProjectionUnsupported = errors.New("projector: projection target not built by this binary")
	ErrPairNotRouted         = errors.New("projector: event pair is not a core_operations pair")
	ErrOwnerRead             = errors.New("projector: owner read")
)

// The statements sqlc cannot serve (batched or unnest-typed) are loaded
// from sql/; everything else is generated into dbsqlc from queries/.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

var (
	stmts   = db.MustLoadStatements("projector", sqlFiles, "sql")
	queries = dbsqlc.New()
)

// The loaded statements, resolved once (a typo fails at package init).
var (
	qActiveClaimGate      = stmts.Get("active_claim_gate")
	qShadowTokenSet       = stmts.Get("shadow_token_set")
	qAggregateAdvance     = stmts.Get("aggregate_advance")
	qAggregateEnsure      = stmts.Get("aggregate_ensure")
	qAggregateLock        = stmts.Get("aggregate_lock")
	qIndexInsert          = stmts.Get("index_insert")
	qLinkLock             = stmts.Get("link_lock")
	qProjectedEventInsert = stmts.Get("projected_event_insert")
	qUnsupportedResolve   = stmts.Get("unsupported_resolve")
)

// Config configures a Projector.
type Config struct {
	// Inbox tunes the shared inbox transaction (timeouts).
	Inbox inbox.Config
	// Versions are the versions of ProjectionName this binary can build.
	// Default {1}. A delivery frozen to another projection is retryable
	// (CodeProjectionUnsupported) and nothing is written.
	Versions []int64
	// AllVersions builds every version a delivery's frozen member names
	// (Versions is then ignored): a member can only freeze a version the
	// outbox registry holds ready and a definition references (DS-8), so
	// the registry is the configuration. serve sets it, so deliveries frozen
	// to the old and to the new version both converge around a cutover.
	AllVersions bool
	// BillingReads is the Billing owner read the finalization pair needs;
	// nil answers owner_read_unavailable (retryable).
	BillingReads BillingReads
	// SettlementReads is the Billing owner read the settlement transition
	// pair needs; nil answers owner_read_unavailable (retryable).
	SettlementReads SettlementReads
	// FinalizationDecisionReads is Billing's
	// readBillingFinalizationDecisionForOperations, which verifies
	// billing.finalization-reconciliation.case-requested@1 before its case
	// is materialised; nil answers owner_read_unavailable (retryable).
	FinalizationDecisionReads coreread.FinalizationDecisionForOperationsReader
	// ResolutionAppliedReads is Billing's
	// readFinalizationReconciliationResolutionAppliedForOperations, which
	// verifies billing.finalization-reconciliation-resolution.applied@1
	// before its case is closed; nil answers owner_read_unavailable
	// (retryable).
	ResolutionAppliedReads coreread.ResolutionAppliedForOperationsReader
	// LateExposureReads is Billing's readLateSettlementExposureForOperations,
	// which verifies billing.late-settlement-exposure.case-requested@1
	// before its case opens or the exposure joins it; nil answers
	// owner_read_unavailable (retryable).
	LateExposureReads coreread.LateExposureCaseRequestReader
	// LateResultReads is Billing's
	// readLateSettlementCommandResultForOperations, which verifies
	// billing.late-settlement-command-result.committed@1 before the result
	// is recorded in its dimension's revision sequence (issue 32 part 2).
	LateResultReads coreread.LateCommandResultReader
	// CaseResolutionReads is Billing's
	// readBillingCaseResolutionAppliedForOperations, which verifies
	// billing.case-resolution.applied@1 before the exposure is marked
	// resolved and its case closed (issue 32 part 2).
	CaseResolutionReads coreread.CaseResolutionAppliedReader
	// WorkerVersion is recorded in the build summary. Default "dev".
	WorkerVersion string
	// ShadowToken makes this projector a shadow builder: every transaction
	// binds the token (the shadow claim fencing token of the build it
	// feeds) and the database refuses its writes once the token is not the
	// build's current one (operations.shadow_fence). Empty for the
	// projector behind the dispatcher, whose applications hold the active
	// claim gate (CutoverGateKey) instead.
	ShadowToken string
}

// CutoverGateKey is the advisory lock key of the active claim gate: held
// shared by every active application, exclusive by a cutover's final
// transaction (internal/operations/cutover).
const CutoverGateKey int64 = 0x4f57_4f50_4354_0001

// Projector is the Operations projector.
type Projector struct {
	cfg       Config
	inbox     *inbox.Inbox
	receipts  *inbox.Table
	buildID   string
	startedAt time.Time
}

// New builds a projector over the core database. Wire it into a transport
// with transport.NewInProcess(map[route.Destination]transport.ConsumerFunc{
// route.CoreOperations: p.Consume}).
func New(pool db.Beginner, cfg Config) (*Projector, error) {
	if len(cfg.Versions) == 0 {
		cfg.Versions = []int64{1}
	}
	if cfg.WorkerVersion == "" {
		cfg.WorkerVersion = "dev"
	}
	p := &Projector{
		cfg:       cfg,
		receipts:  inbox.NewTable("operations", "applied_receipts", true),
		buildID:   uuid.Must(uuid.NewV7()).String(),
		startedAt: time.Now().UTC(),
	}
	in, err := inbox.New(pool, p, cfg.Inbox)
	if err != nil {
		return nil, err
	}
	p.inbox = in
	return p, nil
}

// Consume handles one core_operations delivery (a transport.ConsumerFunc).
func (p *Projector) Consume(ctx context.Context, d transport.Delivery) (transport.Result, error) {
	return p.inbox.Consume(ctx, d)
}

// ConsumeBatch handles several core_operations deliveries in one
// transaction (a transport.BatchConsumerFunc; see inbox.ConsumeBatch).
// Running several events in one transaction is safe here: no event waits
// on a connection of its own (owner reads are plain reads on another pool,
// which never wait for the batch's locks), the active claim gate is taken
// once for the batch (BeginBatchTx) and the build summary row once, last
// (FinishBatchTx). The locks the events take on aggregates and run/
// reservation links are held until the batch commits; two batches that
// cross on them are a deadlock PostgreSQL detects, which fails one event
// of one batch as retryable (serialization_conflict) with nothing of it
// written, never a hang.
func (p *Projector) ConsumeBatch(ctx context.Context, ds []transport.Delivery) []transport.Answer {
	return p.inbox.ConsumeBatch(ctx, ds)
}

// BuildID identifies this projector instance's build summary rows.
func (p *Projector) BuildID() string { return p.buildID }

// Destination implements inbox.Consumer.
func (p *Projector) Destination() route.Destination { return route.CoreOperations }

// Receipts implements inbox.Consumer.
func (p *Projector) Receipts() *inbox.Table { return p.receipts }

// ReceiptKey implements inbox.Consumer: the frozen member's projection
// target is part of the key; a target this binary cannot build is retryable.
func (p *Projector) ReceiptKey(ev *inbox.Event) (inbox.Key, error) {
	t := ev.Delivery.Member.ProjectionTarget
	if !t.Required || t.Name != ProjectionName || (!p.cfg.AllVersions && !slices.Contains(p.cfg.Versions, t.Version)) {
		return inbox.Key{}, transport.Retryable(CodeProjectionUnsupported, fmt.Errorf("%w: %s@%d (builds %s@%v)", ErrProjectionUnsupported, t.Name, t.Version, ProjectionName, p.cfg.Versions))
	}
	return inbox.Key{ConsumerName: route.OperationsProjector, EventID: ev.Envelope.EventID, Projection: t}, nil
}

// supported lists the pairs this release projects.
var supported = map[string]bool{
	envelope.RunCreatedV2:                           true,
	envelope.WalletReservedV2:                       true,
	envelope.BillingFinalizationCommittedV1:         true,
	envelope.BillingSettlementTransitionCommittedV1: true,
	envelope.BillingFinalizationCaseRequestedV1:     true,
	envelope.BillingFinalizationResolutionAppliedV1: true,
	envelope.BillingLateExposureCaseRequestedV1:     true,
}

// SupportedPairs returns the event types this release projects.
func SupportedPairs() []string {
	out := make([]string, 0, len(supported))
	for t := range supported {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

func routedToOperations(eventType string) bool {
	return slices.Contains(deliveryset.FirstReleaseRoutes[eventType], route.CoreOperations)
}

// ApplyTx implements inbox.Consumer (OPS-1 steps 1-4 and the receipt of step 5).
func (p *Projector) ApplyTx(ctx context.Context, tx pgx.Tx, ev *inbox.Event) (inbox.Outcome, error) {
	env := ev.Envelope
	if p.cfg.ShadowToken != "" {
		if _, err := tx.Exec(ctx, qShadowTokenSet, pgx.NamedArgs{"token": p.cfg.ShadowToken}); err != nil {
			return inbox.Outcome{}, fmt.Errorf("bind shadow token: %w", err)
		}
	}
	if !supported[env.EventType] {
		if !routedToOperations(env.EventType) {
			return inbox.Outcome{}, transport.NonRetryable(CodePairNotRouted, fmt.Errorf("%w: %s", ErrPairNotRouted, env.EventType))
		}
		return p.recordUnsupported(ctx, tx, ev)
	}

	// Owner reads run before any projection lock is taken.
	var fin *finalizationFacts
	if env.EventType == envelope.BillingFinalizationCommittedV1 {
		f := finalizationFrom(env)
		if err := p.verifyFinalization(ctx, ev, f); err != nil {
			return inbox.Outcome{}, err
		}
		fin = &f
	}
	var transition *coreread.SettlementTransitionRead
	if env.EventType == envelope.BillingSettlementTransitionCommittedV1 {
		req := transitionRead(env, ev.Delivery.EnvelopeDigest)
		if err := p.verifyTransition(ctx, req); err != nil {
			return inbox.Outcome{}, err
		}
		transition = &req
	}
	var caseReq *caseRequest
	if env.EventType == envelope.BillingFinalizationCaseRequestedV1 {
		r := caseRequestFrom(env, ev.Delivery.EnvelopeDigest)
		if err := p.verifyCaseRequest(ctx, tx, r); err != nil {
			return inbox.Outcome{}, err
		}
		caseReq = &r
	}
	var caseRes *caseResolution
	if env.EventType == envelope.BillingFinalizationResolutionAppliedV1 {
		r := caseResolutionFrom(env, ev.Delivery.EnvelopeDigest)
		if err := p.verifyCaseResolution(ctx, tx, r, tenantOf(env)); err != nil {
			return inbox.Outcome{}, err
		}
		caseRes = &r
	}

	var lateReq *lateCaseRequest
	if env.EventType == envelope.BillingLateExposureCaseRequestedV1 {
		r := lateCaseRequestFrom(env, ev.Delivery.EnvelopeDigest)
		if err := p.verifyLateCaseRequest(ctx, tx, r); err != nil {
			return inbox.Outcome{}, err
		}
		lateReq = &r
	}

	t := ev.Key.Projection
	applied, err := lockAggregate(ctx, tx, t, env.AggregateType, env.AggregateID, ev.Now, p.cfg.ShadowToken == "")
	if err != nil {
		return inbox.Outcome{}, err
	}
	switch rev := env.AggregateRevision; {
	case rev <= applied:
		return inbox.Outcome{}, transport.NonRetryable(CodeRevisionConflict,
			fmt.Errorf("%w: %s %s revision %d already applied (at %d)", ErrRevisionConflict, env.AggregateType, env.AggregateID, rev, applied))
	case rev > applied+1:
		return p.recordGap(ctx, tx, ev, applied)
	}

	var m mutation
	switch env.EventType {
	case envelope.RunCreatedV2:
		m, err = applyRun(ctx, tx, ev, runFrom(env))
	case envelope.WalletReservedV2:
		m, err = applyWallet(ctx, tx, ev, walletFrom(env))
	case envelope.BillingFinalizationCommittedV1:
		m, err = applyFinalization(ctx, tx, ev, *fin)
	case envelope.BillingSettlementTransitionCommittedV1:
		m, err = applyTransition(ctx, tx, ev, *transition)
	case envelope.BillingFinalizationCaseRequestedV1:
		m, err = applyCaseRequest(ctx, tx, ev, *caseReq)
	case envelope.BillingFinalizationResolutionAppliedV1:
		m, err = applyCaseResolution(ctx, tx, ev, *caseRes)
	case envelope.BillingLateExposureCaseRequestedV1:
		m, err = applyLateCaseRequest(ctx, tx, ev, *lateReq)
	}
	if err != nil {
		return inbox.Outcome{}, err
	}
	if err := p.recordApplied(ctx, tx, ev, m); err != nil {
		return inbox.Outcome{}, err
	}
	ref := "oprcpt-" + uuid.Must(uuid.NewV7()).String()
	r, err := receipt.NewOperationsProjectionAppliedReceipt(ref, t, receipt.EventFacts{
		EventID: env.EventID, EventType: env.EventType, EventSchemaVersion: env.EventSchemaVersion,
		EnvelopeDigest: ev.Delivery.EnvelopeDigest,
	}, ev.Now)
	if err != nil {
		return inbox.Outcome{}, transport.NonRetryable(inbox.CodeReceiptInvariant, err)
	}
	return inbox.Applied(r), nil
}

// FinishTx implements inbox.Finisher: the projection build summary (OPS-1 step 6).
func (p *Projector) FinishTx(ctx context.Context, tx pgx.Tx, ev *inbox.Event, out inbox.Outcome) error {
	return p.FinishBatchTx(ctx, tx, []*inbox.Event{ev}, []inbox.Outcome{out})
}

// BeginBatchTx implements inbox.BatchHooks: an active application takes the
// active claim gate shared once for the whole batch, so an event whose
// savepoint rolls back does not release it and queue for it again behind a
// cutover waiting for another batch.
func (p *Projector) BeginBatchTx(ctx context.Context, tx pgx.Tx) error {
	if p.cfg.ShadowToken != "" {
		return nil
	}
	if _, err := tx.Exec(ctx, qActiveClaimGate, pgx.NamedArgs{"gate_key": CutoverGateKey}); err != nil {
		return fmt.Errorf("active claim gate: %w", err)
	}
	return nil
}

// FinishBatchTx implements inbox.BatchHooks: the build summary of the
// batch's events (OPS-1 step 6), one update per projection target with the
// counts and the last applied event, the same row FinishTx per event would
// leave.
func (p *Projector) FinishBatchTx(ctx context.Context, tx pgx.Tx, evs []*inbox.Event, outs []inbox.Outcome) error {
	type summary struct {
		t                  route.ProjectionTarget
		applied, waited    int64
		eventID, eventType *string
	}
	var sums []*summary // in order of first appearance: deterministic statements
	for i, ev := range evs {
		var s *summary
		for _, x := range sums {
			if x.t == ev.Key.Projection {
				s = x
			}
		}
		if s == nil {
			s = &summary{t: ev.Key.Projection}
			sums = append(sums, s)
		}
		if outs[i].Waiting() {
			s.waited++
		} else {
			s.applied++
			s.eventID, s.eventType = &ev.Envelope.EventID, &ev.Envelope.EventType
		}
	}
	for _, s := range sums {
		err := queries.BuildRecord(ctx, tx, dbsqlc.BuildRecordParams{
			BuildID: p.buildID, ProjectionName: s.t.Name, ProjectionVersion: s.t.Version,
			ConsumerName: route.OperationsProjector, WorkerVersion: p.cfg.WorkerVersion, StartedAt: p.startedAt,
			AppliedCount: s.applied, WaitedCount: s.waited, LastEventID: s.eventID, LastEventType: s.eventType, Now: evs[0].Now,
		})
		if err != nil {
			return fmt.Errorf("record build summary: %w", err)
		}
	}
	return nil
}

// lockAggregate locks or creates the projection aggregate and returns its
// applied revision.
// An active application (gate) first takes the active claim gate shared.
func lockAggregate(ctx context.Context, tx pgx.Tx, t route.ProjectionTarget, aggType, aggID string, now time.Time, gate bool) (int64, error) {
	key := pgx.NamedArgs{"projection_name": t.Name, "projection_version": t.Version,
		"aggregate_type": aggType, "aggregate_id": aggID}
	b := &pgx.Batch{}
	if gate {
		b.Queue(qActiveClaimGate, pgx.NamedArgs{"gate_key": CutoverGateKey})
	}
	b.Queue(qAggregateEnsure, withArgs(key, pgx.NamedArgs{"now": now}))
	b.Queue(qAggregateLock, key)
	br := tx.SendBatch(ctx, b)
	defer func() { _ = br.Close() }() // error paths return the first error; the success path checks Close
	if gate {
		if _, err := br.Exec(); err != nil {
			return 0, fmt.Errorf("active claim gate: %w", err)
		}
	}
	if _, err := br.Exec(); err != nil {
		return 0, fmt.Errorf("create aggregate: %w", err)
	}
	rows, err := br.Query()
	if err != nil {
		return 0, fmt.Errorf("lock aggregate: %w", err)
	}
	applied, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, fmt.Errorf("lock aggregate: %w", err)
	}
	return applied, br.Close()
}

// recordGap records the gap and answers a recoverable wait (OPS-2).
func (p *Projector) recordGap(ctx context.Context, tx pgx.Tx, ev *inbox.Event, applied int64) (inbox.Outcome, error) {
	env, t, d := ev.Envelope, ev.Key.Projection, ev.Delivery.EnvelopeDigest
	first, err := queries.GapRecord(ctx, tx, dbsqlc.GapRecordParams{
		ProjectionName: t.Name, ProjectionVersion: t.Version, WaitingEventID: env.EventID, WaitingEventType: env.EventType,
		AggregateType: env.AggregateType, AggregateID: env.AggregateID, WaitingRevision: env.AggregateRevision,
		AppliedRevisionAtDetection: applied, EventEnvelopeDigestAlgorithmVersion: string(d.Algorithm),
		EventEnvelopeSha256: d.Value, Now: ev.Now,
	})
	if err != nil {
		return inbox.Outcome{}, fmt.Errorf("record revision gap: %w", err)
	}
	if alg, sha := first.EventEnvelopeDigestAlgorithmVersion, first.EventEnvelopeSha256; alg != string(d.Algorithm) || sha != d.Value {
		return inbox.Outcome{}, transport.NonRetryable(inbox.CodeEventDigestConflict,
			fmt.Errorf("%w: event %s waited with digest %s:%s", inbox.ErrEventDigestConflict, env.EventID, alg, sha))
	}
	return inbox.Wait(CodeRevisionGapWait, fmt.Errorf("%w: %s %s has revision %d applied, event %s is revision %d",
		ErrRevisionGap, env.AggregateType, env.AggregateID, applied, env.EventID, env.AggregateRevision)), nil
}

// recordUnsupported records a known core_operations pair this release does
// not project and answers a recoverable wait.
func (p *Projector) recordUnsupported(ctx context.Context, tx pgx.Tx, ev *inbox.Event) (inbox.Outcome, error) {
	env, t, d := ev.Envelope, ev.Key.Projection, ev.Delivery.EnvelopeDigest
	first, err := queries.UnsupportedRecord(ctx, tx, dbsqlc.UnsupportedRecordParams{
		ProjectionName: t.Name, ProjectionVersion: t.Version, EventID: env.EventID, EventType: env.EventType,
		EventSchemaVersion: env.EventSchemaVersion, EventEnvelopeDigestAlgorithmVersion: string(d.Algorithm),
		EventEnvelopeSha256: d.Value, ReasonCode: CodeUnsupportedPair, Now: ev.Now,
	})
	if err != nil {
		return inbox.Outcome{}, fmt.Errorf("record unsupported event: %w", err)
	}
	if alg, sha := first.EventEnvelopeDigestAlgorithmVersion, first.EventEnvelopeSha256; alg != string(d.Algorithm) || sha != d.Value {
		return inbox.Outcome{}, transport.NonRetryable(inbox.CodeEventDigestConflict,
			fmt.Errorf("%w: event %s was recorded with digest %s:%s", inbox.ErrEventDigestConflict, env.EventID, alg, sha))
	}
	return inbox.WaitUnsupported(CodeUnsupportedPair, fmt.Errorf("%w: %s", ErrUnsupportedPair, env.EventType)), nil
}

// recordApplied writes the mutation log row and the index entries, advances
// the aggregate and resolves the event's gap/unsupported records.
func (p *Projector) recordApplied(ctx context.Context, tx pgx.Tx, ev *inbox.Event, m mutation) error {
	env, t, d := ev.Envelope, ev.Key.Projection, ev.Delivery.EnvelopeDigest
	target := pgx.NamedArgs{"projection_name": t.Name, "projection_version": t.Version}
	b := &pgx.Batch{}
	b.Queue(qProjectedEventInsert, withArgs(target, pgx.NamedArgs{
		"event_id": env.EventID, "event_type": env.EventType, "event_schema_version": env.EventSchemaVersion,
		"aggregate_type": env.AggregateType, "aggregate_id": env.AggregateID, "aggregate_revision": env.AggregateRevision,
		"run_id": m.runID, "billing_reservation_id": nullable(m.reservationID), "correlation_id": env.CorrelationID,
		"causation_id": nullable(env.CausationID), "operation_id": nullable(env.OperationID),
		"occurred_at": env.OccurredAt, "applied_at": ev.Now, "projection_effect": m.effect,
	}))
	if len(m.index) > 0 {
		kinds, values := make([]string, len(m.index)), make([]string, len(m.index))
		for i, e := range m.index {
			kinds[i], values[i] = e.kind, e.value
		}
		b.Queue(qIndexInsert, withArgs(target, pgx.NamedArgs{"kinds": kinds, "values": values, "run_id": m.runID}))
	}
	b.Queue(qAggregateAdvance, withArgs(target, pgx.NamedArgs{
		"aggregate_type": env.AggregateType, "aggregate_id": env.AggregateID,
		"revision": env.AggregateRevision, "event_id": env.EventID, "now": ev.Now,
	}))
	b.Queue(qUnsupportedResolve, withArgs(target, pgx.NamedArgs{"event_id": env.EventID, "now": ev.Now}))
	br := tx.SendBatch(ctx, b)
	defer func() { _ = br.Close() }() // error paths return the first error; the success path checks Close
	if _, err := br.Exec(); err != nil {
		return fmt.Errorf("insert projected event: %w", err)
	}
	if len(m.index) > 0 {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("insert identifier index: %w", err)
		}
	}
	tag, err := br.Exec()
	if err != nil {
		return fmt.Errorf("advance aggregate: %w", err)
	}
	if tag.RowsAffected() != 1 {
		return transport.NonRetryable(CodeRevisionConflict, fmt.Errorf("%w: aggregate moved under its lock", ErrRevisionConflict))
	}
	if _, err := br.Exec(); err != nil {
		return fmt.Errorf("resolve unsupported record: %w", err)
	}
	if err := br.Close(); err != nil {
		return err
	}
	gap, err := queries.GapResolve(ctx, tx, dbsqlc.GapResolveParams{
		ProjectionName: t.Name, ProjectionVersion: t.Version, EventID: env.EventID, Now: ev.Now,
	})
	alg, sha := gap.EventEnvelopeDigestAlgorithmVersion, gap.EventEnvelopeSha256
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("resolve revision gap: %w", err)
	case alg != string(d.Algorithm) || sha != d.Value:
		return transport.NonRetryable(inbox.CodeEventDigestConflict,
			fmt.Errorf("%w: event %s waited with digest %s:%s", inbox.ErrEventDigestConflict, env.EventID, alg, sha))
	}
	return nil
}

// withArgs merges named-argument sets (later sets win).
func withArgs(sets ...pgx.NamedArgs) pgx.NamedArgs {
	out := pgx.NamedArgs{}
	for _, set := range sets {
		for k, v := range set {
			out[k] = v
		}
	}
	return out
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
