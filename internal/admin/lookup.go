package admin

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/internal/admin/dbsqlc"
)

// reference says where a run or reservation id appears in an event: as its
// aggregate or in a payload field.
type reference struct {
	kind          IDKind
	aggregateType string
	payloadField  string
}

var references = []reference{
	{KindRun, envelope.AggregateRun, "runId"},
	{KindReservation, envelope.AggregateBillingReservation, "billingReservationId"},
}

// Event is one outbox event with its deliveries and attempt history.
type Event struct {
	Boundary string `json:"boundary"`
	// MatchedBy lists the lookup kinds that found the event (event, run,
	// reservation).
	MatchedBy          []IDKind `json:"matchedBy"`
	EventID            string   `json:"eventId"`
	EventType          string   `json:"eventType"`
	EventSchemaVersion string   `json:"eventSchemaVersion"`
	AggregateType      string   `json:"aggregateType"`
	AggregateID        string   `json:"aggregateId"`
	AggregateRevision  int64    `json:"aggregateRevision"`
	TenantKind         string   `json:"tenantKind"`
	TenantID           string   `json:"tenantId"`
	WorkspaceID        string   `json:"workspaceId"`
	CorrelationID      string   `json:"correlationId"`
	CausationID        string   `json:"causationId,omitempty"`
	OperationID        string   `json:"operationId,omitempty"`
	// The definition quadruple frozen at append.
	DeliverySetVersion                   int64  `json:"deliverySetVersion"`
	DeliverySetDefinitionSchemaVersion   string `json:"deliverySetDefinitionSchemaVersion"`
	DeliverySetDefinitionDigestAlgorithm string `json:"deliverySetDefinitionDigestAlgorithmVersion"`
	DeliverySetDefinitionDigest          string `json:"deliverySetDefinitionDigest"`
	EventEnvelopeDigestAlgorithmVersion  string `json:"eventEnvelopeDigestAlgorithmVersion"`
	EventEnvelopeSHA256                  string `json:"eventEnvelopeSha256"`
	// Envelope is the RFC 8785 canonical envelope text exactly as stored:
	// the bytes eventEnvelopeSha256 covers (kept a string so no encoder
	// re-indents or re-escapes it).
	Envelope    string     `json:"envelope"`
	OccurredAt  time.Time  `json:"occurredAt"`
	CreatedAt   time.Time  `json:"createdAt"`
	PublishedAt *time.Time `json:"publishedAt"`
	Deliveries  []Delivery `json:"deliveries"`
}

// Delivery is one delivery of an event with its attempt history.
type Delivery struct {
	Destination       string     `json:"destination"`
	ConsumerName      string     `json:"consumerName"`
	Mandatory         bool       `json:"mandatory"`
	Status            string     `json:"status"`
	AttemptCount      int        `json:"attemptCount"`
	AvailableAt       time.Time  `json:"availableAt"`
	CreatedAt         time.Time  `json:"createdAt"`
	LeaseOwner        string     `json:"leaseOwner,omitempty"`
	LeaseExpiresAt    *time.Time `json:"leaseExpiresAt"`
	CurrentAttemptID  string     `json:"currentAttemptId,omitempty"`
	LastAttemptAt     *time.Time `json:"lastAttemptAt"`
	DeliveredAt       *time.Time `json:"deliveredAt"`
	LastErrorCode     string     `json:"lastErrorCode,omitempty"`
	LastErrorRef      string     `json:"lastErrorRef,omitempty"`
	ExpectedReceipt   string     `json:"expectedReceiptType"`
	ExpectedReceiptSV string     `json:"expectedReceiptSchemaVersion"`
	// RequiredProjection is "name@version" for core_operations, else "".
	RequiredProjection string `json:"requiredProjection,omitempty"`
	// Ack is the frozen acknowledgement of an acknowledged delivery.
	Ack *Ack `json:"ack"`
	// Quarantine is the quarantine row of a quarantined delivery.
	Quarantine *QuarantineRecord `json:"quarantine"`
	Attempts   []Attempt         `json:"attempts"`
}

// Ack is the receipt quadruple an acknowledged delivery froze.
type Ack struct {
	ReceiptType                   string `json:"receiptType"`
	ReceiptKey                    string `json:"receiptKey"`
	ReceiptSchemaVersion          string `json:"receiptSchemaVersion"`
	ReceiptDigestAlgorithmVersion string `json:"receiptDigestAlgorithmVersion"`
	ReceiptDigest                 string `json:"receiptDigest"`
}

// QuarantineRecord is the explicit quarantine row of a delivery.
type QuarantineRecord struct {
	Reason         string     `json:"reason"`
	QuarantinedAt  time.Time  `json:"quarantinedAt"`
	CaseID         string     `json:"caseId,omitempty"`
	AttemptID      string     `json:"attemptId,omitempty"`
	AcknowledgedAt *time.Time `json:"acknowledgedAt"`
}

// Attempt is one attempt start joined with its finish (nil fields while the
// attempt is in flight or was never finished).
type Attempt struct {
	// Number is the attempt's position in start order, from 1.
	Number              int        `json:"number"`
	AttemptID           string     `json:"attemptId"`
	StartedAt           time.Time  `json:"startedAt"`
	FinishedAt          *time.Time `json:"finishedAt"`
	Outcome             string     `json:"outcome,omitempty"`
	RetryDisposition    string     `json:"retryDisposition,omitempty"`
	NormalizedErrorCode string     `json:"normalizedErrorCode,omitempty"`
	SanitizedErrorRef   string     `json:"sanitizedErrorRef,omitempty"`
}

// Finished reports whether the attempt has its finish.
func (a Attempt) Finished() bool { return a.FinishedAt != nil }

// LookupResult is the answer of a lookup by exact id.
type LookupResult struct {
	Kind       IDKind           `json:"kind"`
	ID         string           `json:"id"`
	Boundaries []BoundaryStatus `json:"boundaries"`
	// Events found, ordered by creation time.
	Events []Event `json:"events"`
	// Truncated is true when a run or reservation has more events in some
	// boundary than Config.LookupLimit, or more attempts than
	// Config.AttemptLimit.
	Truncated bool `json:"truncated"`
	// Billing is the reservation's ledger and decision chain (core
	// database; reservation and any lookups).
	Billing *ReservationBilling `json:"billing,omitempty"`
}

// Lookup finds the events an exact id names in every boundary: the event
// with that event id (KindEvent), the events of that run (KindRun) or
// reservation (KindReservation), or all three (KindAny). id must be an exact
// UUID (*InvalidIDError otherwise; no query runs). Finding nothing is not
// an error: Events is empty.
func (r *Reader) Lookup(ctx context.Context, kind IDKind, id string) (LookupResult, error) {
	if _, err := ParseKind(string(kind)); err != nil {
		return LookupResult{}, err
	}
	if kind == "" {
		kind = KindAny
	}
	norm, err := ParseID(kind, id)
	if err != nil {
		return LookupResult{}, err
	}
	out := LookupResult{Kind: kind, ID: norm, Events: []Event{}}
	out.Boundaries = r.eachBoundary(ctx, func(ctx context.Context, tx pgx.Tx, st BoundaryStatus) error {
		events, truncated, err := r.lookupBoundary(ctx, tx, st, kind, norm)
		if err != nil {
			return err
		}
		out.Events = append(out.Events, events...)
		out.Truncated = out.Truncated || truncated
		if kind == KindReservation || kind == KindAny {
			b, err := reservationBilling(ctx, tx, norm)
			if err != nil {
				return err
			}
			if b != nil {
				out.Billing = b
			}
		}
		return nil
	})
	sort.SliceStable(out.Events, func(i, j int) bool {
		a, b := out.Events[i], out.Events[j]
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.Before(b.CreatedAt)
		}
		if a.AggregateRevision != b.AggregateRevision {
			return a.AggregateRevision < b.AggregateRevision
		}
		return a.EventID < b.EventID
	})
	return out, nil
}

func (r *Reader) lookupBoundary(ctx context.Context, tx pgx.Tx, st BoundaryStatus, kind IDKind, id string) ([]Event, bool, error) {
	var (
		events    []Event
		index     = map[string]int{}
		truncated bool
	)
	add := func(found []Event, by IDKind) {
		for _, e := range found {
			if i, ok := index[e.EventID]; ok {
				events[i].MatchedBy = append(events[i].MatchedBy, by)
				continue
			}
			e.MatchedBy = []IDKind{by}
			index[e.EventID] = len(events)
			events = append(events, e)
		}
	}
	if kind == KindEvent || kind == KindAny {
		rows, err := tx.Query(ctx, qEventById, pgx.NamedArgs{"event_id": id})
		if err != nil {
			return nil, false, fmt.Errorf("look up event: %w", err)
		}
		found, err := collectEvents(rows, st)
		if err != nil {
			return nil, false, fmt.Errorf("look up event: %w", err)
		}
		add(found, KindEvent)
	}
	for _, ref := range references {
		if kind != ref.kind && kind != KindAny {
			continue
		}
		rows, err := tx.Query(ctx, qEventsByReference, pgx.NamedArgs{
			"id": id, "aggregate_type": ref.aggregateType, "payload_field": ref.payloadField, "row_limit": r.cfg.LookupLimit + 1,
		})
		if err != nil {
			return nil, false, fmt.Errorf("look up %s: %w", ref.kind, err)
		}
		found, err := collectEvents(rows, st)
		if err != nil {
			return nil, false, fmt.Errorf("look up %s: %w", ref.kind, err)
		}
		if len(found) > r.cfg.LookupLimit {
			found, truncated = found[:r.cfg.LookupLimit], true
		}
		add(found, ref.kind)
	}
	if len(events) == 0 {
		return nil, truncated, nil
	}
	attemptsTruncated, err := r.attachDeliveries(ctx, tx, events)
	if err != nil {
		return nil, false, err
	}
	return events, truncated || attemptsTruncated, nil
}

// eventRow is a row of the event lookups (sql/fragment_event_columns.sql),
// read by column name.
type eventRow struct {
	EventID                                     string     `db:"event_id"`
	EventType                                   string     `db:"event_type"`
	SchemaVersion                               string     `db:"schema_version"`
	AggregateType                               string     `db:"aggregate_type"`
	AggregateID                                 string     `db:"aggregate_id"`
	AggregateRevision                           int64      `db:"aggregate_revision"`
	TenantKind                                  string     `db:"tenant_kind"`
	TenantID                                    string     `db:"tenant_id"`
	WorkspaceID                                 string     `db:"workspace_id"`
	CorrelationID                               string     `db:"correlation_id"`
	CausationID                                 *string    `db:"causation_id"`
	OperationID                                 *string    `db:"operation_id"`
	DeliverySetVersion                          int64      `db:"delivery_set_version"`
	DeliverySetDefinitionSchemaVersion          string     `db:"delivery_set_definition_schema_version"`
	DeliverySetDefinitionDigestAlgorithmVersion string     `db:"delivery_set_definition_digest_algorithm_version"`
	DeliverySetDefinitionDigest                 string     `db:"delivery_set_definition_digest"`
	EventEnvelopeDigestAlgorithmVersion         string     `db:"event_envelope_digest_algorithm_version"`
	EventEnvelopeSHA256                         string     `db:"event_envelope_sha256"`
	EventEnvelope                               string     `db:"event_envelope"`
	OccurredAt                                  time.Time  `db:"occurred_at"`
	CreatedAt                                   time.Time  `db:"created_at"`
	PublishedAt                                 *time.Time `db:"published_at"`
}

func collectEvents(rows pgx.Rows, st BoundaryStatus) ([]Event, error) {
	found, err := pgx.CollectRows(rows, pgx.RowToStructByName[eventRow])
	if err != nil {
		return nil, err
	}
	out := make([]Event, 0, len(found))
	for _, r := range found {
		out = append(out, Event{
			Boundary: st.Boundary, EventID: r.EventID, EventType: r.EventType, EventSchemaVersion: r.SchemaVersion,
			AggregateType: r.AggregateType, AggregateID: r.AggregateID, AggregateRevision: r.AggregateRevision,
			TenantKind: r.TenantKind, TenantID: r.TenantID, WorkspaceID: r.WorkspaceID, CorrelationID: r.CorrelationID,
			CausationID: deref(r.CausationID), OperationID: deref(r.OperationID),
			DeliverySetVersion:                   r.DeliverySetVersion,
			DeliverySetDefinitionSchemaVersion:   r.DeliverySetDefinitionSchemaVersion,
			DeliverySetDefinitionDigestAlgorithm: r.DeliverySetDefinitionDigestAlgorithmVersion,
			DeliverySetDefinitionDigest:          r.DeliverySetDefinitionDigest,
			EventEnvelopeDigestAlgorithmVersion:  r.EventEnvelopeDigestAlgorithmVersion,
			EventEnvelopeSHA256:                  r.EventEnvelopeSHA256,
			Envelope:                             r.EventEnvelope,
			OccurredAt:                           r.OccurredAt.UTC(), CreatedAt: r.CreatedAt.UTC(), PublishedAt: utc(r.PublishedAt),
			Deliveries: []Delivery{},
		})
	}
	return out, nil
}

// attachDeliveries reads the deliveries and attempts of events and attaches
// them; it reports whether the attempt list was cut at Config.AttemptLimit.
func (r *Reader) attachDeliveries(ctx context.Context, tx pgx.Tx, events []Event) (bool, error) {
	ids := make([]string, len(events))
	byEvent := map[string]int{}
	for i, e := range events {
		ids[i] = e.EventID
		byEvent[e.EventID] = i
	}
	rows, err := queries.DeliveriesOfEvents(ctx, tx, ids)
	if err != nil {
		return false, fmt.Errorf("read deliveries: %w", err)
	}
	type keyed struct {
		eventID string
		d       Delivery
	}
	deliveries := make([]keyed, 0, len(rows))
	for _, row := range rows {
		deliveries = append(deliveries, keyed{eventID: row.EventID, d: deliveryOf(row)})
	}
	type deliveryKey struct{ eventID, destination string }
	slot := map[deliveryKey][2]int{}
	for _, k := range deliveries {
		i := byEvent[k.eventID]
		slot[deliveryKey{k.eventID, k.d.Destination}] = [2]int{i, len(events[i].Deliveries)}
		events[i].Deliveries = append(events[i].Deliveries, k.d)
	}

	attemptRows, err := queries.AttemptsOfEvents(ctx, tx, dbsqlc.AttemptsOfEventsParams{
		EventIds: ids, RowLimit: int32(r.cfg.AttemptLimit + 1),
	})
	if err != nil {
		return false, fmt.Errorf("read attempts: %w", err)
	}
	type keyedAttempt struct {
		key deliveryKey
		a   Attempt
	}
	attempts := make([]keyedAttempt, 0, len(attemptRows))
	for _, row := range attemptRows {
		attempts = append(attempts, keyedAttempt{
			key: deliveryKey{row.EventID, row.Destination},
			a: Attempt{AttemptID: row.AttemptID, StartedAt: row.StartedAt.UTC(), FinishedAt: utc(row.FinishedAt),
				Outcome: deref(row.Outcome), RetryDisposition: deref(row.RetryDisposition),
				NormalizedErrorCode: deref(row.NormalizedErrorCode), SanitizedErrorRef: deref(row.SanitizedErrorRef)},
		})
	}
	truncated := len(attempts) > r.cfg.AttemptLimit
	if truncated {
		attempts = attempts[:r.cfg.AttemptLimit]
	}
	for _, k := range attempts {
		s, ok := slot[k.key]
		if !ok {
			continue // a start always references its delivery; defensive
		}
		d := &events[s[0]].Deliveries[s[1]]
		k.a.Number = len(d.Attempts) + 1
		d.Attempts = append(d.Attempts, k.a)
	}
	return truncated, nil
}

// deliveryOf builds a delivery (without attempts) from its row.
func deliveryOf(row dbsqlc.DeliveriesOfEventsRow) Delivery {
	d := Delivery{
		Destination: row.Destination, ConsumerName: row.ConsumerName, Mandatory: row.Mandatory, Status: row.Status,
		AttemptCount: int(row.AttemptCount), AvailableAt: row.AvailableAt.UTC(), CreatedAt: row.CreatedAt.UTC(),
		LeaseOwner: deref(row.LeaseOwner), LeaseExpiresAt: utc(row.LeaseExpiresAt), CurrentAttemptID: deref(row.CurrentAttemptID),
		LastAttemptAt: utc(row.LastAttemptAt), DeliveredAt: utc(row.DeliveredAt),
		LastErrorCode: deref(row.LastErrorCode), LastErrorRef: deref(row.LastErrorRef),
		ExpectedReceipt: row.ExpectedReceiptType, ExpectedReceiptSV: row.ExpectedReceiptSchemaVersion,
		Attempts: []Attempt{},
	}
	if row.RequiredProjectionName != nil && row.RequiredProjectionVersion != nil {
		d.RequiredProjection = fmt.Sprintf("%s@%d", *row.RequiredProjectionName, *row.RequiredProjectionVersion)
	}
	if row.AckReceiptKey != nil {
		d.Ack = &Ack{ReceiptType: deref(row.AckReceiptType), ReceiptKey: *row.AckReceiptKey,
			ReceiptSchemaVersion:          deref(row.AckReceiptSchemaVersion),
			ReceiptDigestAlgorithmVersion: deref(row.AckReceiptDigestAlgorithmVersion), ReceiptDigest: deref(row.AckReceiptDigest)}
	}
	if row.QuarantineReason != nil && row.QuarantinedAt != nil {
		d.Quarantine = &QuarantineRecord{Reason: *row.QuarantineReason, QuarantinedAt: row.QuarantinedAt.UTC(),
			CaseID: deref(row.QuarantineCaseID), AttemptID: deref(row.QuarantineAttemptID),
			AcknowledgedAt: utc(row.QuarantineAcknowledgedAt)}
	}
	return d
}
