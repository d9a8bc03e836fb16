package admin

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/envelope"
)

// DestinationCounts are the delivery counts of one destination in one
// producer database.
type DestinationCounts struct {
	Boundary     string `json:"boundary"`
	Destination  string `json:"destination"`
	Pending      int64  `json:"pending"`
	Leased       int64  `json:"leased"`
	Acknowledged int64  `json:"acknowledged"`
	Quarantined  int64  `json:"quarantined"`
	Total        int64  `json:"total"`
	// Retrying are pending deliveries that already had an attempt (a retry
	// is scheduled).
	Retrying int64 `json:"retrying"`
	// LeaseExpired are leased deliveries whose lease has run out and that
	// recovery has not finished yet.
	LeaseExpired int64 `json:"leaseExpired"`
	// UnsupportedWaiting are pending deliveries waiting because their pair is
	// not supported by the consumer or their destination has no consumer in
	// the dispatching process (backing off up to the dispatcher's maximum);
	// UnsupportedRetryAt is the latest time one of them is retried.
	UnsupportedWaiting int64      `json:"unsupportedWaiting"`
	UnsupportedRetryAt *time.Time `json:"unsupportedRetryAt"`
	// OldestPendingCreatedAt is the creation (append commit) time of the
	// oldest open delivery, pending or leased; nil when none is open.
	OldestPendingCreatedAt *time.Time `json:"oldestPendingCreatedAt"`
	// OldestPendingAgeSeconds is the age of that delivery at the
	// boundary's snapshot time (0 when none is open).
	OldestPendingAgeSeconds float64 `json:"oldestPendingAgeSeconds"`
}

// Open is the number of deliveries not yet acknowledged or quarantined.
func (c DestinationCounts) Open() int64 { return c.Pending + c.Leased }

// OldestPendingAge is OldestPendingAgeSeconds as a duration.
func (c DestinationCounts) OldestPendingAge() time.Duration {
	return time.Duration(c.OldestPendingAgeSeconds * float64(time.Second))
}

// Quarantine is one quarantined delivery.
type Quarantine struct {
	Boundary           string     `json:"boundary"`
	Destination        string     `json:"destination"`
	EventID            string     `json:"eventId"`
	EventType          string     `json:"eventType"`
	EventSchemaVersion string     `json:"eventSchemaVersion"`
	Reason             string     `json:"reason"`
	QuarantinedAt      time.Time  `json:"quarantinedAt"`
	AttemptID          string     `json:"attemptId,omitempty"`
	AttemptCount       int        `json:"attemptCount"`
	LastErrorCode      string     `json:"lastErrorCode,omitempty"`
	CaseID             string     `json:"caseId,omitempty"`
	AcknowledgedAt     *time.Time `json:"acknowledgedAt"`
}

// QuarantineList is the bounded list of recent quarantines across the
// boundaries, newest first.
type QuarantineList struct {
	// Total is the number of quarantine rows in the boundaries read.
	Total int64 `json:"total"`
	// Limit is the bound of Items.
	Limit int `json:"limit"`
	// Truncated is true when more quarantines exist than Items shows.
	Truncated bool         `json:"truncated"`
	Items     []Quarantine `json:"items"`
}

// Definition is one registered Delivery Set Definition of one producer
// database.
type Definition struct {
	Boundary string `json:"boundary"`
	// The definition quadruple.
	Version                int64  `json:"deliverySetVersion"`
	SchemaVersion          string `json:"deliverySetDefinitionSchemaVersion"`
	DigestAlgorithmVersion string `json:"deliverySetDefinitionDigestAlgorithmVersion"`
	Digest                 string `json:"deliverySetDefinitionDigest"`
	// Registry metadata.
	Status               string     `json:"status"`
	ActivatedAt          *time.Time `json:"activatedAt"`
	RetiredAt            *time.Time `json:"retiredAt"`
	RegisteredAt         time.Time  `json:"registeredAt"`
	SourceRelease        string     `json:"sourceRelease,omitempty"`
	ApplicableEventCount int        `json:"applicableEventCount"`
	MemberCount          int        `json:"memberCount"`
	Destinations         []string   `json:"destinations"`
}

// ProjectionPointer is the active version of one projection in one
// producer database.
type ProjectionPointer struct {
	Boundary           string    `json:"boundary"`
	ProjectionName     string    `json:"projectionName"`
	ProjectionVersion  int64     `json:"projectionVersion"`
	DeliverySetVersion int64     `json:"deliverySetVersion"`
	SwitchedAt         time.Time `json:"switchedAt"`
}

// Overview is everything the admin overview page shows, each boundary read
// in one snapshot.
type Overview struct {
	Boundaries  []BoundaryStatus    `json:"boundaries"`
	Deliveries  []DestinationCounts `json:"deliveries"`
	Quarantine  QuarantineList      `json:"quarantine"`
	Definitions []Definition        `json:"definitions"`
	Projections []ProjectionPointer `json:"projections"`
	// Money is Billing's reservations, ledger, exposures and cases (core
	// database) and Metering's blocked Work (metering database), each read
	// in its own snapshot (issue 36, OBS-4).
	Money Money `json:"money"`
}

// DeliveriesResult is the delivery counts of every boundary.
type DeliveriesResult struct {
	Boundaries []BoundaryStatus    `json:"boundaries"`
	Deliveries []DestinationCounts `json:"deliveries"`
}

// QuarantineResult is the recent quarantine list of every boundary.
type QuarantineResult struct {
	Boundaries []BoundaryStatus `json:"boundaries"`
	Quarantine QuarantineList   `json:"quarantine"`
}

// DefinitionsResult is the definitions and projection pointers of every
// boundary.
type DefinitionsResult struct {
	Boundaries  []BoundaryStatus    `json:"boundaries"`
	Definitions []Definition        `json:"definitions"`
	Projections []ProjectionPointer `json:"projections"`
}

// Overview reads counts, recent quarantines, definitions and projection
// pointers of every boundary, and the money sections (Money).
func (r *Reader) Overview(ctx context.Context) Overview {
	out := Overview{Deliveries: []DestinationCounts{}, Definitions: []Definition{}, Projections: []ProjectionPointer{}}
	var quarantines []Quarantine
	out.Boundaries = r.eachBoundary(ctx, func(ctx context.Context, tx pgx.Tx, st BoundaryStatus) error {
		counts, err := deliveryCounts(ctx, tx, st)
		if err != nil {
			return err
		}
		total, items, err := r.quarantines(ctx, tx, st)
		if err != nil {
			return err
		}
		defs, pointers, err := definitions(ctx, tx, st)
		if err != nil {
			return err
		}
		out.Deliveries = append(out.Deliveries, counts...)
		out.Quarantine.Total += total
		quarantines = append(quarantines, items...)
		out.Definitions = append(out.Definitions, defs...)
		out.Projections = append(out.Projections, pointers...)
		return nil
	})
	out.Quarantine = r.mergeQuarantines(out.Quarantine.Total, quarantines)
	out.Money = r.Money(ctx)
	return out
}

// Deliveries reads the delivery counts of every boundary.
func (r *Reader) Deliveries(ctx context.Context) DeliveriesResult {
	out := DeliveriesResult{Deliveries: []DestinationCounts{}}
	out.Boundaries = r.eachBoundary(ctx, func(ctx context.Context, tx pgx.Tx, st BoundaryStatus) error {
		counts, err := deliveryCounts(ctx, tx, st)
		if err != nil {
			return err
		}
		out.Deliveries = append(out.Deliveries, counts...)
		return nil
	})
	return out
}

// Quarantines reads the most recent quarantines of every boundary, newest
// first, bounded by Config.QuarantineLimit in total.
func (r *Reader) Quarantines(ctx context.Context) QuarantineResult {
	var (
		out   QuarantineResult
		total int64
		items []Quarantine
	)
	out.Boundaries = r.eachBoundary(ctx, func(ctx context.Context, tx pgx.Tx, st BoundaryStatus) error {
		n, q, err := r.quarantines(ctx, tx, st)
		if err != nil {
			return err
		}
		total += n
		items = append(items, q...)
		return nil
	})
	out.Quarantine = r.mergeQuarantines(total, items)
	return out
}

// Definitions reads the registered definitions and projection pointers of
// every boundary.
func (r *Reader) Definitions(ctx context.Context) DefinitionsResult {
	out := DefinitionsResult{Definitions: []Definition{}, Projections: []ProjectionPointer{}}
	out.Boundaries = r.eachBoundary(ctx, func(ctx context.Context, tx pgx.Tx, st BoundaryStatus) error {
		defs, pointers, err := definitions(ctx, tx, st)
		if err != nil {
			return err
		}
		out.Definitions = append(out.Definitions, defs...)
		out.Projections = append(out.Projections, pointers...)
		return nil
	})
	return out
}

// deliveryCountsRow is a row of sql/delivery_counts.sql, read by column name.
type deliveryCountsRow struct {
	Destination         string     `db:"destination"`
	Pending             int64      `db:"pending"`
	Retrying            int64      `db:"retrying"`
	Leased              int64      `db:"leased"`
	LeaseExpired        int64      `db:"lease_expired"`
	Acknowledged        int64      `db:"acknowledged"`
	Quarantined         int64      `db:"quarantined"`
	Total               int64      `db:"total"`
	UnsupportedWaiting  int64      `db:"unsupported_waiting"`
	UnsupportedRetryAt  *time.Time `db:"unsupported_next_retry_at"`
	OldestOpenCreatedAt *time.Time `db:"oldest_open_created_at"`
}

func deliveryCounts(ctx context.Context, tx pgx.Tx, st BoundaryStatus) ([]DestinationCounts, error) {
	rows, err := tx.Query(ctx, qDeliveryCounts)
	if err != nil {
		return nil, fmt.Errorf("count deliveries: %w", err)
	}
	counted, err := pgx.CollectRows(rows, pgx.RowToStructByName[deliveryCountsRow])
	if err != nil {
		return nil, fmt.Errorf("count deliveries: %w", err)
	}
	out := make([]DestinationCounts, 0, len(counted))
	for _, r := range counted {
		c := DestinationCounts{Boundary: st.Boundary, Destination: r.Destination, Pending: r.Pending, Retrying: r.Retrying,
			Leased: r.Leased, LeaseExpired: r.LeaseExpired, Acknowledged: r.Acknowledged, Quarantined: r.Quarantined,
			Total: r.Total, OldestPendingCreatedAt: utc(r.OldestOpenCreatedAt),
			UnsupportedWaiting: r.UnsupportedWaiting, UnsupportedRetryAt: utc(r.UnsupportedRetryAt)}
		if c.OldestPendingCreatedAt != nil {
			c.OldestPendingAgeSeconds = max(0, st.AsOf.Sub(*c.OldestPendingCreatedAt).Seconds())
		}
		out = append(out, c)
	}
	// Destinations this boundary can deliver to under the active definition
	// and has no delivery for yet: listed with zeros.
	expected, err := expectedDestinations(ctx, tx, st.Boundary)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, c := range out {
		seen[c.Destination] = true
	}
	for _, d := range expected {
		if !seen[d] {
			out = append(out, DestinationCounts{Boundary: st.Boundary, Destination: d})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Destination < out[j].Destination })
	return out, nil
}

// expectedDestinations returns the destinations of the active definition's
// members whose event pair the boundary produces (contracts/envelope names
// each pair's producer boundary). For a boundary name the contracts do not
// know, every destination of the active definition counts.
func expectedDestinations(ctx context.Context, tx pgx.Tx, boundary string) ([]string, error) {
	routes, err := queries.RouteActiveList(ctx, tx)
	if err != nil {
		return nil, fmt.Errorf("read active routes: %w", err)
	}
	known := false
	for _, p := range []string{envelope.ProducerCore, envelope.ProducerExecution, envelope.ProducerGateway, envelope.ProducerMetering} {
		known = known || p == boundary
	}
	set := map[string]bool{}
	for _, r := range routes {
		if known {
			pair, err := envelope.Pair(r.EventType, r.SchemaVersion)
			if err != nil || pair.Producer != boundary {
				continue
			}
		}
		set[r.Destination] = true
	}
	out := make([]string, 0, len(set))
	for d := range set {
		out = append(out, d)
	}
	sort.Strings(out)
	return out, nil
}

func (r *Reader) quarantines(ctx context.Context, tx pgx.Tx, st BoundaryStatus) (int64, []Quarantine, error) {
	total, err := queries.QuarantineTotal(ctx, tx)
	if err != nil {
		return 0, nil, fmt.Errorf("count quarantines: %w", err)
	}
	rows, err := queries.QuarantineRecent(ctx, tx, int32(r.cfg.QuarantineLimit))
	if err != nil {
		return 0, nil, fmt.Errorf("list quarantines: %w", err)
	}
	items := make([]Quarantine, 0, len(rows))
	for _, q := range rows {
		items = append(items, Quarantine{
			Boundary: st.Boundary, Destination: q.Destination, EventID: q.EventID, EventType: q.EventType,
			EventSchemaVersion: q.SchemaVersion, Reason: q.Reason, QuarantinedAt: q.QuarantinedAt.UTC(),
			AttemptID: deref(q.AttemptID), AttemptCount: int(q.AttemptCount), LastErrorCode: deref(q.LastErrorCode),
			CaseID: deref(q.CaseID), AcknowledgedAt: utc(q.AcknowledgedAt),
		})
	}
	return total, items, nil
}

// mergeQuarantines orders the per-boundary lists newest first and keeps the
// configured number.
func (r *Reader) mergeQuarantines(total int64, items []Quarantine) QuarantineList {
	sort.SliceStable(items, func(i, j int) bool {
		if !items[i].QuarantinedAt.Equal(items[j].QuarantinedAt) {
			return items[i].QuarantinedAt.After(items[j].QuarantinedAt)
		}
		if items[i].Boundary != items[j].Boundary {
			return items[i].Boundary < items[j].Boundary
		}
		if items[i].EventID != items[j].EventID {
			return items[i].EventID < items[j].EventID
		}
		return items[i].Destination < items[j].Destination
	})
	if len(items) > r.cfg.QuarantineLimit {
		items = items[:r.cfg.QuarantineLimit]
	}
	if items == nil {
		items = []Quarantine{}
	}
	return QuarantineList{Total: total, Limit: r.cfg.QuarantineLimit, Truncated: int64(len(items)) < total, Items: items}
}

func definitions(ctx context.Context, tx pgx.Tx, st BoundaryStatus) ([]Definition, []ProjectionPointer, error) {
	defRows, err := queries.DefinitionList(ctx, tx)
	if err != nil {
		return nil, nil, fmt.Errorf("list definitions: %w", err)
	}
	defs := make([]Definition, 0, len(defRows))
	for _, d := range defRows {
		defs = append(defs, Definition{
			Boundary: st.Boundary, Version: d.DeliverySetVersion, SchemaVersion: d.DeliverySetDefinitionSchemaVersion,
			DigestAlgorithmVersion: d.DeliverySetDefinitionDigestAlgorithmVersion, Digest: d.DeliverySetDefinitionDigest,
			Status: d.Status, ActivatedAt: utc(d.ActivatedAt), RetiredAt: utc(d.RetiredAt), RegisteredAt: d.RegisteredAt.UTC(),
			SourceRelease: deref(d.SourceRelease), ApplicableEventCount: int(d.ApplicableEventCount),
			MemberCount: int(d.MemberCount), Destinations: d.Destinations,
		})
	}
	pointerRows, err := queries.ProjectionPointerList(ctx, tx)
	if err != nil {
		return nil, nil, fmt.Errorf("list projection pointers: %w", err)
	}
	pointers := make([]ProjectionPointer, 0, len(pointerRows))
	for _, p := range pointerRows {
		pointers = append(pointers, ProjectionPointer{Boundary: st.Boundary, ProjectionName: p.ProjectionName,
			ProjectionVersion: p.ProjectionVersion, DeliverySetVersion: p.DeliverySetVersion, SwitchedAt: p.SwitchedAt.UTC()})
	}
	return defs, pointers, nil
}
