// Package readmodel answers the Operations read-model queries from code and
// from the CLI: an operation summary by any exact identifier, an operation's
// timeline, unresolved revision gaps, reservations waiting for their Run, and
// the completeness proof and query (OPS-3, OPS-4). Every query reads one
// projection target: the one given, or the projection's active pointer
// (outbox.projection_pointers in the same core database).
package readmodel

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/operations/projector"
)

//go:embed sql/*.sql
var queries embed.FS

func query(name string) string {
	b, err := queries.ReadFile("sql/" + name + ".sql")
	if err != nil {
		panic("readmodel: missing query " + name)
	}
	s := strings.TrimSpace(string(b))
	s = strings.ReplaceAll(s, "{{summary_columns}}", fragment("summary_columns"))
	return strings.ReplaceAll(s, "{{pending_columns}}", fragment("pending_columns"))
}

// fragment returns a column list without its comment header.
func fragment(name string) string {
	b, err := queries.ReadFile("sql/" + name + ".sql")
	if err != nil {
		panic("readmodel: missing fragment " + name)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "--") {
			lines = append(lines, l)
		}
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

var (
	qActiveProjection       = query("active_projection")
	qOperationByRun         = query("operation_by_run")
	qOperationsByIdentifier = query("operations_by_identifier")
	qPendingByIdentifier    = query("pending_by_identifier")
	qPendingList            = query("pending_list")
	qTimeline               = query("timeline")
	qGapsOpen               = query("gaps_open")
	qCompletenessInputs     = query("completeness_inputs")
	qProofInsert            = query("proof_insert")
	qProofLatest            = query("proof_latest")
)

// Errors of the read model.
var (
	ErrNoActiveProjection = errors.New("readmodel: the operations projection has no active pointer")
	ErrInvalidIdentifier  = errors.New("readmodel: identifier is not an exact UUID")
	ErrNotFound           = db.ErrNotFound
)

// Pool is what the reader needs: queries and transactions with options.
type Pool interface {
	db.Executor
	db.TxBeginner
}

var _ Pool = (*pgxpool.Pool)(nil)

// Reader runs read-model queries on the core database.
type Reader struct {
	pool Pool
}

// New builds a reader.
func New(pool Pool) *Reader { return &Reader{pool: pool} }

// Params select the projection target; zero means the active version of
// projector.ProjectionName.
type Params struct {
	Projection route.ProjectionTarget
	// Limit bounds list queries (default 1000).
	Limit int
}

func (p Params) limit() int {
	if p.Limit <= 0 {
		return 1000
	}
	return p.Limit
}

// Target resolves the projection target of p.
func (r *Reader) Target(ctx context.Context, p Params) (route.ProjectionTarget, error) {
	return target(ctx, r.pool, p)
}

func target(ctx context.Context, q db.Executor, p Params) (route.ProjectionTarget, error) {
	if p.Projection.Required {
		return p.Projection, nil
	}
	var v int64
	err := q.QueryRow(ctx, qActiveProjection, projector.ProjectionName).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return route.ProjectionTarget{}, ErrNoActiveProjection
	}
	if err != nil {
		return route.ProjectionTarget{}, fmt.Errorf("read projection pointer: %w", err)
	}
	return route.Required(projector.ProjectionName, v), nil
}

// Tenant is the envelope tenant of an operation.
type Tenant struct {
	Kind, ID, WorkspaceID, ProjectID string
}

// Reservation states of an operation summary.
const (
	ReservationSourceDelayed = "source_delayed"
	ReservationReserved      = "reserved"
	ReservationFinalized     = "finalized"
)

// OperationSummary is one operation (one Run) of the read model.
type OperationSummary struct {
	Projection           route.ProjectionTarget
	RunID                string
	OperationID          string
	CorrelationID        string
	Tenant               Tenant
	BillingAccountID     string
	BillingReservationID string
	RunAdmissionManifest strict.Quadruple
	RunEventID           string
	RunOccurredAt        time.Time
	Reservation          ReservationView
	CreatedAt, UpdatedAt time.Time
}

// ReservationView is the reservation part of a summary. State
// source_delayed means the wallet event has not been projected yet: the
// other fields are empty (never a made-up state).
type ReservationView struct {
	State            string
	SourceDelayed    bool
	EventID          string
	OccurredAt       *time.Time
	EconomicIdentity string // RFC 8785 text of SettlementEconomicIdentity@1
	ReservedAmount   string
	Finalization     *FinalizationView
}

// FinalizationView is the absorbing Billing finalization of a reservation.
type FinalizationView struct {
	EventID        string
	OccurredAt     time.Time
	Decision       string
	SettledAmount  string
	ReleasedAmount string
}

func scanSummary(t route.ProjectionTarget, row interface{ Scan(...any) error }, pre ...any) (OperationSummary, error) {
	var (
		s                                             OperationSummary
		opID, project, resEvent, resIdentity, resAmt  *string
		finEvent, finDecision, settled, released, alg *string
		resAt, finAt                                  *time.Time
	)
	dest := append(pre, &s.RunID, &opID, &s.CorrelationID, &s.Tenant.Kind, &s.Tenant.ID, &s.Tenant.WorkspaceID,
		&project, &s.BillingAccountID, &s.BillingReservationID,
		&s.RunAdmissionManifest.Ref, &s.RunAdmissionManifest.SchemaVersion, &alg, &s.RunAdmissionManifest.Digest,
		&s.RunEventID, &s.RunOccurredAt, &s.Reservation.State, &resEvent, &resAt, &resIdentity, &resAmt,
		&finEvent, &finAt, &finDecision, &settled, &released, &s.CreatedAt, &s.UpdatedAt)
	if err := row.Scan(dest...); err != nil {
		return OperationSummary{}, err
	}
	s.Projection = t
	s.OperationID, s.Tenant.ProjectID = deref(opID), deref(project)
	s.RunAdmissionManifest.DigestAlgorithmVersion = digest.Algorithm(deref(alg))
	s.Reservation.SourceDelayed = s.Reservation.State == ReservationSourceDelayed
	s.Reservation.EventID, s.Reservation.OccurredAt = deref(resEvent), resAt
	s.Reservation.EconomicIdentity, s.Reservation.ReservedAmount = deref(resIdentity), deref(resAmt)
	if finEvent != nil && finAt != nil {
		s.Reservation.Finalization = &FinalizationView{EventID: *finEvent, OccurredAt: *finAt, Decision: deref(finDecision),
			SettledAmount: deref(settled), ReleasedAmount: deref(released)}
	}
	return s, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func exactID(id string) (string, error) {
	u, err := uuid.Parse(id)
	if err != nil || u.String() != id {
		return "", fmt.Errorf("%w: %q", ErrInvalidIdentifier, id)
	}
	return id, nil
}

// Operation returns the summary of the operation of runID (ErrNotFound).
func (r *Reader) Operation(ctx context.Context, runID string, p Params) (OperationSummary, error) {
	id, err := exactID(runID)
	if err != nil {
		return OperationSummary{}, err
	}
	t, err := r.Target(ctx, p)
	if err != nil {
		return OperationSummary{}, err
	}
	s, err := scanSummary(t, r.pool.QueryRow(ctx, qOperationByRun, t.Name, t.Version, id))
	if err != nil {
		return OperationSummary{}, db.NotFound(err)
	}
	return s, nil
}

// Match is one operation an identifier names and the kinds it matched
// (run_id, reservation_id, event_id, correlation_id, operation_id).
type Match struct {
	Kinds     []string
	Operation OperationSummary
}

// LookupResult answers an exact-identifier lookup: the operations it names
// and, separately, Wallet-first reservations it names that have no
// operation yet (OPS-3: they are never shown as an operation).
type LookupResult struct {
	Identifier      string
	Projection      route.ProjectionTarget
	Matches         []Match
	PendingUnlinked []PendingReservation
}

// Lookup finds operations by any exact identifier: run id, reservation id,
// event id, correlation id or operation id. No prefix or pattern matching.
func (r *Reader) Lookup(ctx context.Context, identifier string, p Params) (LookupResult, error) {
	id, err := exactID(identifier)
	if err != nil {
		return LookupResult{}, err
	}
	t, err := r.Target(ctx, p)
	if err != nil {
		return LookupResult{}, err
	}
	res := LookupResult{Identifier: id, Projection: t}
	rows, err := r.pool.Query(ctx, qOperationsByIdentifier, t.Name, t.Version, id)
	if err != nil {
		return LookupResult{}, fmt.Errorf("look up identifier: %w", err)
	}
	res.Matches, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Match, error) {
		var m Match
		s, err := scanSummary(t, row, &m.Kinds)
		m.Operation = s
		return m, err
	})
	if err != nil {
		return LookupResult{}, fmt.Errorf("look up identifier: %w", err)
	}
	rows, err = r.pool.Query(ctx, qPendingByIdentifier, t.Name, t.Version, id)
	if err != nil {
		return LookupResult{}, fmt.Errorf("look up pending reservations: %w", err)
	}
	res.PendingUnlinked, err = pgx.CollectRows(rows, scanPending)
	if err != nil {
		return LookupResult{}, fmt.Errorf("look up pending reservations: %w", err)
	}
	return res, nil
}

// TimelineEntry is one applied event of an operation.
type TimelineEntry struct {
	EventID            string
	EventType          string
	EventSchemaVersion string
	AggregateType      string
	AggregateID        string
	AggregateRevision  int64
	CorrelationID      string
	CausationID        string
	OperationID        string
	OccurredAt         time.Time
	AppliedAt          time.Time
	Effect             string
}

// Timeline returns the applied events of the operation of runID in
// occurrence order (including a reservation's events while it waits for
// the Run).
func (r *Reader) Timeline(ctx context.Context, runID string, p Params) ([]TimelineEntry, error) {
	id, err := exactID(runID)
	if err != nil {
		return nil, err
	}
	t, err := r.Target(ctx, p)
	if err != nil {
		return nil, err
	}
	rows, err := r.pool.Query(ctx, qTimeline, t.Name, t.Version, id)
	if err != nil {
		return nil, fmt.Errorf("timeline: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (TimelineEntry, error) {
		var (
			e                    TimelineEntry
			causation, operation *string
		)
		err := row.Scan(&e.EventID, &e.EventType, &e.EventSchemaVersion, &e.AggregateType, &e.AggregateID, &e.AggregateRevision,
			&e.CorrelationID, &causation, &operation, &e.OccurredAt, &e.AppliedAt, &e.Effect)
		e.CausationID, e.OperationID = deref(causation), deref(operation)
		return e, err
	})
}

// PendingReservation is a Wallet-first reservation waiting for its Run.
type PendingReservation struct {
	BillingReservationID string
	RunID                string
	BillingAccountID     string
	RunAdmissionManifest strict.Quadruple
	Tenant               Tenant
	CorrelationID        string
	CausationID          string
	OperationID          string
	WalletEventID        string
	WalletOccurredAt     time.Time
	EconomicIdentity     string
	ReservedAmount       string
	FinalizationEventID  string
	FinalizationDecision string
	ReceivedAt           time.Time
}

func scanPending(row pgx.CollectableRow) (PendingReservation, error) {
	var (
		p                                          PendingReservation
		alg                                        string
		project, causation, operation, finEvent, d *string
	)
	err := row.Scan(&p.BillingReservationID, &p.RunID, &p.BillingAccountID,
		&p.RunAdmissionManifest.Ref, &p.RunAdmissionManifest.SchemaVersion, &alg, &p.RunAdmissionManifest.Digest,
		&p.Tenant.Kind, &p.Tenant.ID, &p.Tenant.WorkspaceID, &project, &p.CorrelationID, &causation, &operation,
		&p.WalletEventID, &p.WalletOccurredAt, &p.EconomicIdentity, &p.ReservedAmount, &finEvent, &d, &p.ReceivedAt)
	p.RunAdmissionManifest.DigestAlgorithmVersion = digest.Algorithm(alg)
	p.Tenant.ProjectID, p.CausationID, p.OperationID = deref(project), deref(causation), deref(operation)
	p.FinalizationEventID, p.FinalizationDecision = deref(finEvent), deref(d)
	return p, err
}

// PendingUnlinkedReservations lists reservations waiting for their Run (OPS-3).
func (r *Reader) PendingUnlinkedReservations(ctx context.Context, p Params) ([]PendingReservation, error) {
	t, err := r.Target(ctx, p)
	if err != nil {
		return nil, err
	}
	rows, err := r.pool.Query(ctx, qPendingList, t.Name, t.Version, p.limit())
	if err != nil {
		return nil, fmt.Errorf("pending reservations: %w", err)
	}
	return pgx.CollectRows(rows, scanPending)
}

// Gap is one unresolved revision gap (OPS-2).
type Gap struct {
	WaitingEventID   string
	WaitingEventType string
	AggregateType    string
	AggregateID      string
	WaitingRevision  int64
	// AppliedRevisionAtDetection is the aggregate's revision when the gap was first seen.
	AppliedRevisionAtDetection int64
	// AppliedRevision is the aggregate's revision now.
	AppliedRevision int64
	// MissingRevisionsArrived: every missing revision is applied; the
	// waiting event applies on its next redelivery.
	MissingRevisionsArrived bool
	DetectedAt, LastSeenAt  time.Time
	SeenCount               int
}

// PendingGaps lists unresolved revision gaps.
func (r *Reader) PendingGaps(ctx context.Context, p Params) ([]Gap, error) {
	t, err := r.Target(ctx, p)
	if err != nil {
		return nil, err
	}
	rows, err := r.pool.Query(ctx, qGapsOpen, t.Name, t.Version, p.limit())
	if err != nil {
		return nil, fmt.Errorf("pending gaps: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Gap, error) {
		var g Gap
		err := row.Scan(&g.WaitingEventID, &g.WaitingEventType, &g.AggregateType, &g.AggregateID, &g.WaitingRevision,
			&g.AppliedRevisionAtDetection, &g.AppliedRevision, &g.DetectedAt, &g.LastSeenAt, &g.SeenCount)
		g.MissingRevisionsArrived = g.AppliedRevision+1 >= g.WaitingRevision
		return g, err
	})
}
