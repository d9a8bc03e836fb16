// Package readmodel answers the Operations read-model queries from code and
// from the CLI: an operation summary by any exact identifier, an operation's
// timeline, unresolved revision gaps, reservations waiting for their Run, and
// the completeness proof and query (OPS-3, OPS-4). Every query reads one
// projection target: the one given, or the projection's active pointer
// (the outbox-owned view outbox.active_projections in the same core database).
package readmodel

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/operations/readmodel/dbsqlc"
)

// The completeness inputs statement is loaded from sql/ (its result is a
// wide row of aggregates read by name); every other query is generated into
// dbsqlc from queries/.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

var (
	stmts   = db.MustLoadStatements("readmodel", sqlFiles, "sql")
	queries = dbsqlc.New()
)

// The loaded statements, resolved once (a typo fails at package init).
var (
	qCompletenessInputs = stmts.Get("completeness_inputs")
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
	v, err := queries.ActiveProjection(ctx, q, projector.ProjectionName)
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

func summaryOf(t route.ProjectionTarget, r dbsqlc.OperationsOperationSummary) OperationSummary {
	s := OperationSummary{
		Projection: t, RunID: r.RunID, OperationID: deref(r.OperationID), CorrelationID: r.CorrelationID,
		Tenant:           Tenant{Kind: r.TenantKind, ID: r.TenantID, WorkspaceID: r.WorkspaceID, ProjectID: deref(r.ProjectID)},
		BillingAccountID: r.BillingAccountID, BillingReservationID: r.BillingReservationID,
		RunAdmissionManifest: strict.Quadruple{Ref: r.RunAdmissionManifestRef, SchemaVersion: r.RunAdmissionManifestSchemaVersion,
			DigestAlgorithmVersion: digest.Algorithm(r.RunAdmissionManifestDigestAlgorithmVersion), Digest: r.RunAdmissionManifestDigest},
		RunEventID: r.RunEventID, RunOccurredAt: r.RunOccurredAt,
		Reservation: ReservationView{
			State: r.ReservationState, SourceDelayed: r.ReservationState == ReservationSourceDelayed,
			EventID: deref(r.ReservationEventID), OccurredAt: r.ReservationOccurredAt,
			EconomicIdentity: deref(r.ReservationEconomicIdentity), ReservedAmount: deref(r.ReservedAmount),
		},
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
	if r.FinalizationEventID != nil && r.FinalizationOccurredAt != nil {
		s.Reservation.Finalization = &FinalizationView{EventID: *r.FinalizationEventID, OccurredAt: *r.FinalizationOccurredAt,
			Decision: deref(r.BillingFinalizationDecision), SettledAmount: deref(r.SettledAmount), ReleasedAmount: deref(r.ReleasedAmount)}
	}
	return s
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
	row, err := queries.OperationByRun(ctx, r.pool, dbsqlc.OperationByRunParams{
		ProjectionName: t.Name, ProjectionVersion: t.Version, RunID: id,
	})
	if err != nil {
		return OperationSummary{}, db.NotFound(err)
	}
	return summaryOf(t, row.OperationsOperationSummary), nil
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
	matches, err := queries.OperationsByIdentifier(ctx, r.pool, dbsqlc.OperationsByIdentifierParams{
		ProjectionName: t.Name, ProjectionVersion: t.Version, Identifier: id,
	})
	if err != nil {
		return LookupResult{}, fmt.Errorf("look up identifier: %w", err)
	}
	for _, m := range matches {
		res.Matches = append(res.Matches, Match{Kinds: m.Kinds, Operation: summaryOf(t, m.OperationsOperationSummary)})
	}
	pending, err := queries.PendingByIdentifier(ctx, r.pool, dbsqlc.PendingByIdentifierParams{
		ProjectionName: t.Name, ProjectionVersion: t.Version, Identifier: id,
	})
	if err != nil {
		return LookupResult{}, fmt.Errorf("look up pending reservations: %w", err)
	}
	for _, p := range pending {
		res.PendingUnlinked = append(res.PendingUnlinked, pendingOf(p.OperationsPendingUnlinkedReservation))
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
	rows, err := queries.Timeline(ctx, r.pool, dbsqlc.TimelineParams{ProjectionName: t.Name, ProjectionVersion: t.Version, RunID: id})
	if err != nil {
		return nil, fmt.Errorf("timeline: %w", err)
	}
	out := make([]TimelineEntry, 0, len(rows))
	for _, e := range rows {
		out = append(out, TimelineEntry{
			EventID: e.EventID, EventType: e.EventType, EventSchemaVersion: e.EventSchemaVersion,
			AggregateType: e.AggregateType, AggregateID: e.AggregateID, AggregateRevision: e.AggregateRevision,
			CorrelationID: e.CorrelationID, CausationID: deref(e.CausationID), OperationID: deref(e.OperationID),
			OccurredAt: e.OccurredAt, AppliedAt: e.AppliedAt, Effect: e.ProjectionEffect,
		})
	}
	return out, nil
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

func pendingOf(r dbsqlc.OperationsPendingUnlinkedReservation) PendingReservation {
	return PendingReservation{
		BillingReservationID: r.BillingReservationID, RunID: r.RunID, BillingAccountID: r.BillingAccountID,
		RunAdmissionManifest: strict.Quadruple{Ref: r.RunAdmissionManifestRef, SchemaVersion: r.RunAdmissionManifestSchemaVersion,
			DigestAlgorithmVersion: digest.Algorithm(r.RunAdmissionManifestDigestAlgorithmVersion), Digest: r.RunAdmissionManifestDigest},
		Tenant:        Tenant{Kind: r.TenantKind, ID: r.TenantID, WorkspaceID: r.WorkspaceID, ProjectID: deref(r.ProjectID)},
		CorrelationID: r.CorrelationID, CausationID: deref(r.CausationID), OperationID: deref(r.OperationID),
		WalletEventID: r.WalletEventID, WalletOccurredAt: r.WalletOccurredAt,
		EconomicIdentity: r.ReservationEconomicIdentity, ReservedAmount: r.ReservedAmount,
		FinalizationEventID: deref(r.FinalizationEventID), FinalizationDecision: deref(r.BillingFinalizationDecision),
		ReceivedAt: r.ReceivedAt,
	}
}

// PendingUnlinkedReservations lists reservations waiting for their Run (OPS-3).
func (r *Reader) PendingUnlinkedReservations(ctx context.Context, p Params) ([]PendingReservation, error) {
	t, err := r.Target(ctx, p)
	if err != nil {
		return nil, err
	}
	rows, err := queries.PendingList(ctx, r.pool, dbsqlc.PendingListParams{
		ProjectionName: t.Name, ProjectionVersion: t.Version, RowLimit: int32(p.limit()),
	})
	if err != nil {
		return nil, fmt.Errorf("pending reservations: %w", err)
	}
	out := make([]PendingReservation, 0, len(rows))
	for _, r := range rows {
		out = append(out, pendingOf(r.OperationsPendingUnlinkedReservation))
	}
	return out, nil
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
	rows, err := queries.GapsOpen(ctx, r.pool, dbsqlc.GapsOpenParams{
		ProjectionName: t.Name, ProjectionVersion: t.Version, RowLimit: int32(p.limit()),
	})
	if err != nil {
		return nil, fmt.Errorf("pending gaps: %w", err)
	}
	out := make([]Gap, 0, len(rows))
	for _, g := range rows {
		out = append(out, Gap{
			WaitingEventID: g.WaitingEventID, WaitingEventType: g.WaitingEventType,
			AggregateType: g.AggregateType, AggregateID: g.AggregateID, WaitingRevision: g.WaitingRevision,
			AppliedRevisionAtDetection: g.AppliedRevisionAtDetection, AppliedRevision: g.AppliedRevision,
			MissingRevisionsArrived: g.AppliedRevision+1 >= g.WaitingRevision,
			DetectedAt:              g.DetectedAt, LastSeenAt: g.LastSeenAt, SeenCount: int(g.SeenCount),
		})
	}
	return out, nil
}
