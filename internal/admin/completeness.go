package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/operations/cutover"
	"github.com/oceanway/core/internal/operations/readmodel"
)

// CoreBoundary is the boundary whose database holds the Operations
// projection (schema operations).
const CoreBoundary = string(boundary.Core)

// Outbox completeness verdicts of one producer database.
const (
	// VerdictComplete: every mandatory delivery is acknowledged and
	// published_at is set exactly on the events whose mandatory deliveries
	// are all acknowledged.
	VerdictComplete = "complete"
	// VerdictIncomplete: some mandatory deliveries are open or quarantined;
	// published_at agrees with them.
	VerdictIncomplete = "incomplete"
	// VerdictInconsistent: published_at disagrees with the mandatory
	// deliveries (an invariant is broken).
	VerdictInconsistent = "inconsistent"
)

// Reasons in OutboxCompleteness.Reasons.
const (
	ReasonOpenMandatory        = "open_mandatory_deliveries"
	ReasonQuarantinedMandatory = "quarantined_mandatory_deliveries"
	ReasonPublishedWithOpen    = "published_with_unacknowledged_mandatory_delivery"
	ReasonUnpublishedAllAcked  = "unpublished_with_all_mandatory_acknowledged"
)

// DestinationCompleteness is the mandatory deliveries of one destination.
type DestinationCompleteness struct {
	Destination  string `json:"destination"`
	Mandatory    int64  `json:"mandatory"`
	Open         int64  `json:"open"`
	Quarantined  int64  `json:"quarantined"`
	Acknowledged int64  `json:"acknowledged"`
}

// OutboxCompleteness is the outbox side of completeness of one producer
// database, read in one snapshot: mandatory deliveries that are not
// acknowledged, and published_at coverage. It is not the Operations
// projection's completeness proof (that needs the Operations receipts and
// gaps; see internal/operations/readmodel) and it never combines
// boundaries into a chain verdict (DESIGN.md §2).
type OutboxCompleteness struct {
	Boundary string `json:"boundary"`
	Verdict  string `json:"verdict"`
	// Reasons are empty for complete.
	Reasons   []string `json:"reasons"`
	Events    int64    `json:"events"`
	Published int64    `json:"published"`
	// PublishedWithOpenMandatory counts published events with a mandatory
	// delivery that is not acknowledged (must be 0).
	PublishedWithOpenMandatory int64 `json:"publishedWithOpenMandatory"`
	// UnpublishedAllAcknowledged counts unpublished events whose mandatory
	// deliveries are all acknowledged (must be 0).
	UnpublishedAllAcknowledged int64 `json:"unpublishedAllAcknowledged"`
	// OldestUnpublishedCreatedAt is the append time of the oldest
	// unpublished event; nil when every event is published.
	OldestUnpublishedCreatedAt  *time.Time                `json:"oldestUnpublishedCreatedAt"`
	OldestUnpublishedAgeSeconds float64                   `json:"oldestUnpublishedAgeSeconds"`
	Destinations                []DestinationCompleteness `json:"destinations"`
}

// Unpublished is the number of events without published_at.
func (c OutboxCompleteness) Unpublished() int64 { return c.Events - c.Published }

// Destination returns the row of one destination (zero when it has no
// mandatory deliveries).
func (c OutboxCompleteness) Destination(name string) DestinationCompleteness {
	for _, d := range c.Destinations {
		if d.Destination == name {
			return d
		}
	}
	return DestinationCompleteness{Destination: name}
}

// CompletenessResult is the outbox completeness of every boundary and,
// when the core boundary is read, the Operations projection's completeness.
type CompletenessResult struct {
	Boundaries []BoundaryStatus     `json:"boundaries"`
	Outbox     []OutboxCompleteness `json:"outbox"`
	// Operations is the answer of the Operations read model's completeness
	// query (OPS-4) on the core boundary; nil when core is not read.
	Operations *OperationsCompleteness `json:"operations"`
	// ProjectionVersions is every version of the Operations projection on
	// the core boundary (receipts, missing source events, gaps, the
	// completeness answer per version, fingerprint) and its shadow builds
	// with their readiness proofs (DS-8); nil when core is not read.
	// Read-only: the page shows them, the CLI (`oceanway projection`)
	// builds and switches.
	ProjectionVersions *cutover.Status `json:"projectionVersions"`
	// ProjectionVersionsError is set when they could not be read.
	ProjectionVersionsError string `json:"projectionVersionsError,omitempty"`
}

// OperationsCompleteness is the Operations read model's completeness
// answer (internal/operations/readmodel.Reader.Completeness): it compares the
// latest recorded proof with the current inputs in one read-only snapshot.
// Admin never records a proof (that is a write); without one the answer is
// unverified / no_completed_snapshot.
type OperationsCompleteness struct {
	Boundary string `json:"boundary"`
	// Projection is "name@version" of the projection target ("" when none
	// is active).
	Projection             string `json:"projection"`
	VerificationState      string `json:"verificationState"`
	SnapshotCurrency       string `json:"snapshotCurrency"`
	ProjectionCompleteness string `json:"projectionCompleteness"`
	VerificationReason     string `json:"verificationReason"`
	// CompletenessAsOf identifies the proof compared with; nil when
	// unverified.
	CompletenessAsOf *ProofRef `json:"completenessAsOf"`
	// ProofReasons are the reasons the referenced proof recorded.
	ProofReasons []string `json:"proofReasons"`
	// Error is set when the query could not run (e.g. the operations
	// schema is missing in this core database).
	Error string `json:"error,omitempty"`
}

// ProofRef is completenessAsOf of an Operations completeness answer.
type ProofRef struct {
	SnapshotID  string    `json:"snapshotId"`
	EvaluatedAt time.Time `json:"evaluatedAt"`
}

// operationsCompleteness asks the Operations read model of the core
// boundary. Its query runs in its own READ ONLY, REPEATABLE READ transaction.
func (r *Reader) operationsCompleteness(ctx context.Context) *OperationsCompleteness {
	pool, ok := r.boundaries[CoreBoundary]
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.StatementTimeout)
	defer cancel()
	c, err := readmodel.New(pool).Completeness(ctx, readmodel.Params{})
	out := &OperationsCompleteness{
		Boundary:               CoreBoundary,
		VerificationState:      c.VerificationState,
		SnapshotCurrency:       c.SnapshotCurrency,
		ProjectionCompleteness: c.ProjectionCompleteness,
		VerificationReason:     c.VerificationReason,
		ProofReasons:           []string{},
	}
	if c.Projection.Required {
		out.Projection = fmt.Sprintf("%s@%d", c.Projection.Name, c.Projection.Version)
	}
	if c.CompletenessAsOf != nil {
		out.CompletenessAsOf = &ProofRef{SnapshotID: c.CompletenessAsOf.SnapshotID, EvaluatedAt: c.CompletenessAsOf.EvaluatedAt.UTC()}
	}
	if c.Integrity != nil && c.Integrity.Reasons != nil {
		out.ProofReasons = c.Integrity.Reasons
	}
	if err != nil {
		out.Error = err.Error()
	}
	return out
}

// eventCompletenessRow is the row of sql/completeness_events.sql, read by column name.
type eventCompletenessRow struct {
	Events                     int64      `db:"events"`
	Published                  int64      `db:"published"`
	PublishedWithOpenMandatory int64      `db:"published_with_open_mandatory"`
	UnpublishedAllAcknowledged int64      `db:"unpublished_all_acknowledged"`
	OldestUnpublishedCreatedAt *time.Time `db:"oldest_unpublished_created_at"`
}

// Completeness reads the outbox side of completeness of every boundary.
// It scans the events and deliveries of each producer database once; the
// statement timeout bounds it.
func (r *Reader) Completeness(ctx context.Context) CompletenessResult {
	out := CompletenessResult{Outbox: []OutboxCompleteness{}}
	out.Boundaries = r.eachBoundary(ctx, func(ctx context.Context, tx pgx.Tx, st BoundaryStatus) error {
		c := OutboxCompleteness{Boundary: st.Boundary, Reasons: []string{}}
		rows, err := tx.Query(ctx, qCompletenessEvents)
		if err != nil {
			return fmt.Errorf("read event completeness: %w", err)
		}
		ev, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[eventCompletenessRow])
		if err != nil {
			return fmt.Errorf("read event completeness: %w", err)
		}
		c.Events, c.Published = ev.Events, ev.Published
		c.PublishedWithOpenMandatory, c.UnpublishedAllAcknowledged = ev.PublishedWithOpenMandatory, ev.UnpublishedAllAcknowledged
		c.OldestUnpublishedCreatedAt = utc(ev.OldestUnpublishedCreatedAt)
		if c.OldestUnpublishedCreatedAt != nil {
			c.OldestUnpublishedAgeSeconds = max(0, st.AsOf.Sub(*c.OldestUnpublishedCreatedAt).Seconds())
		}
		destinations, err := queries.CompletenessDeliveries(ctx, tx)
		if err != nil {
			return fmt.Errorf("read delivery completeness: %w", err)
		}
		c.Destinations = make([]DestinationCompleteness, 0, len(destinations))
		for _, d := range destinations {
			c.Destinations = append(c.Destinations, DestinationCompleteness{Destination: d.Destination,
				Mandatory: d.Mandatory, Open: d.Open, Quarantined: d.Quarantined, Acknowledged: d.Acknowledged})
		}
		var open, quarantined int64
		for _, d := range c.Destinations {
			open += d.Open
			quarantined += d.Quarantined
		}
		add := func(cond bool, reason string) {
			if cond {
				c.Reasons = append(c.Reasons, reason)
			}
		}
		add(open > 0, ReasonOpenMandatory)
		add(quarantined > 0, ReasonQuarantinedMandatory)
		add(c.PublishedWithOpenMandatory > 0, ReasonPublishedWithOpen)
		add(c.UnpublishedAllAcknowledged > 0, ReasonUnpublishedAllAcked)
		switch {
		case c.PublishedWithOpenMandatory > 0 || c.UnpublishedAllAcknowledged > 0:
			c.Verdict = VerdictInconsistent
		case len(c.Reasons) > 0:
			c.Verdict = VerdictIncomplete
		default:
			c.Verdict = VerdictComplete
		}
		out.Outbox = append(out.Outbox, c)
		return nil
	})
	out.Operations = r.operationsCompleteness(ctx)
	if pool, ok := r.boundaries[CoreBoundary]; ok {
		ctx, cancel := context.WithTimeout(ctx, r.cfg.StatementTimeout)
		defer cancel()
		st, err := cutover.ReadStatus(ctx, pool, "")
		if err != nil {
			out.ProjectionVersionsError = err.Error()
		} else {
			out.ProjectionVersions = &st
		}
	}
	return out
}
