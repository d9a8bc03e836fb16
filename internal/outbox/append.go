package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/db"
)

// AppendResult describes what AppendTx wrote.
type AppendResult struct {
	// Definition is the quadruple frozen on every event of the append.
	Definition deliveryset.Quadruple
	// Events in the order they were given.
	Events []AppendedEvent
}

// AppendedEvent is one stored event.
type AppendedEvent struct {
	EventID            string
	EventType          string
	EventSchemaVersion string
	// EnvelopeDigest is eventEnvelopeDigestAlgorithmVersion + eventEnvelopeSha256.
	EnvelopeDigest digest.Digest
	// Deliveries are the frozen mandatory members a pending delivery row was
	// created for.
	Deliveries []route.Member
}

// NewEventID returns a fresh event id (UUIDv7, lowercase).
func NewEventID() string { return uuid.Must(uuid.NewV7()).String() }

// NewEventIDs allocates n event ids at once, so that a transaction that
// appends several events can freeze causation between them before building
// the envelopes (OB-APPEND-3).
func NewEventIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = NewEventID()
	}
	return ids
}

// AppendTx appends events inside the caller's transaction (OB-APPEND-1..4,
// DS-9). In order:
//
//  1. every event without an EventID gets one (ids are allocated before any
//     event is validated or digested; use NewEventIDs to reference them in
//     causationId);
//  2. each envelope is strictly validated by the contracts (exact pair,
//     payload, aggregate rule) and digested with the contracts'
//     jcs-sha256-v1 envelope digest;
//  3. the activation lock is taken shared and the active definition read
//     from the database; the exact pair and every mandatory member the pair
//     requires must be in it;
//  4. all events are inserted with the frozen definition quadruple, then one
//     pending delivery row per mandatory member (two multi-row statements,
//     one round trip).
//
// At COMMIT a deferred constraint trigger re-proves, per event, that the
// delivery rows equal the frozen definition's mandatory members; a failure
// there (SQLSTATE OW004/OW006) fails the caller's commit. Errors wrap the
// sentinels of errors.go. AppendTx never commits or rolls back: on error the
// caller's transaction must be rolled back.
func AppendTx(ctx context.Context, tx pgx.Tx, events ...envelope.Envelope) (AppendResult, error) {
	if len(events) == 0 {
		return AppendResult{}, nil
	}
	// 1. Ids first.
	envs := make([]envelope.Envelope, len(events))
	copy(envs, events)
	for i := range envs {
		if envs[i].EventID == "" {
			envs[i].EventID = NewEventID()
		}
	}
	// 2. Strict validation and digests (contracts).
	type prepared struct {
		env       *envelope.Envelope
		canonical []byte
		digest    digest.Digest
	}
	prep := make([]prepared, len(envs))
	seen := make(map[string]int, len(envs))
	for i := range envs {
		e, err := envelope.Build(envs[i])
		if err != nil {
			return AppendResult{}, &InvalidEnvelopeError{Index: i, EventID: envs[i].EventID, Err: err}
		}
		if j, dup := seen[e.EventID]; dup {
			return AppendResult{}, fmt.Errorf("%w: events %d and %d share %s", ErrDuplicateEventID, j, i, e.EventID)
		}
		seen[e.EventID] = i
		canonical, err := e.Canonical()
		if err != nil {
			return AppendResult{}, &InvalidEnvelopeError{Index: i, EventID: e.EventID, Err: err}
		}
		d, err := e.Digest()
		if err != nil {
			return AppendResult{}, &InvalidEnvelopeError{Index: i, EventID: e.EventID, Err: err}
		}
		prep[i] = prepared{env: e, canonical: canonical, digest: d}
	}

	// 3. The active definition, read in this transaction (DS-9).
	def, err := activeDefinitionTx(ctx, tx)
	if err != nil {
		return AppendResult{}, err
	}
	q := def.Quadruple()
	res := AppendResult{Definition: q, Events: make([]AppendedEvent, len(prep))}

	n := len(prep)
	var (
		ids, types, versions, aggTypes, aggIDs      = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		revisions                                   = make([]int64, n)
		tenantKinds, tenantIDs, workspaceIDs        = make([]string, n), make([]string, n), make([]string, n)
		projectIDs, causationIDs, operationIDs      = make([]*string, n), make([]*string, n), make([]*string, n)
		correlationIDs, envelopesText, digestValues = make([]string, n), make([]string, n), make([]string, n)
		occurred                                    = make([]time.Time, n)

		dEventIDs, dDests, dConsumers, dTypes, dSchemas []string
		dProjNames                                      []*string
		dProjVersions                                   []*int64
	)
	for i, p := range prep {
		e := p.env
		members, err := mandatoryMembers(def, e.EventType, e.EventSchemaVersion)
		if err != nil {
			return AppendResult{}, err
		}
		if p.digest.Algorithm != digest.JCSSHA256V1 {
			// The schema stores only registered algorithm versions; a new one
			// needs a migration first.
			return AppendResult{}, fmt.Errorf("%w: envelope digest algorithm %s not storable", ErrInvalidEnvelope, p.digest.Algorithm)
		}
		ids[i], types[i], versions[i] = e.EventID, e.EventType, e.EventSchemaVersion
		aggTypes[i], aggIDs[i], revisions[i] = e.AggregateType, e.AggregateID, e.AggregateRevision
		tenantKinds[i], tenantIDs[i], workspaceIDs[i] = e.TenantKind, e.TenantID, e.WorkspaceID
		projectIDs[i], causationIDs[i], operationIDs[i] = optional(e.ProjectID), optional(e.CausationID), optional(e.OperationID)
		correlationIDs[i], envelopesText[i], digestValues[i] = e.CorrelationID, string(p.canonical), p.digest.Value
		occurred[i] = e.OccurredAt
		for _, m := range members {
			dEventIDs = append(dEventIDs, e.EventID)
			dDests = append(dDests, string(m.Destination))
			dConsumers = append(dConsumers, m.ConsumerName)
			dTypes = append(dTypes, m.ExpectedReceiptType)
			dSchemas = append(dSchemas, m.ExpectedReceiptSchemaVersion)
			if m.ProjectionTarget.Required {
				name, version := m.ProjectionTarget.Name, m.ProjectionTarget.Version
				dProjNames = append(dProjNames, &name)
				dProjVersions = append(dProjVersions, &version)
			} else {
				dProjNames = append(dProjNames, nil)
				dProjVersions = append(dProjVersions, nil)
			}
		}
		res.Events[i] = AppendedEvent{
			EventID: e.EventID, EventType: e.EventType, EventSchemaVersion: e.EventSchemaVersion,
			EnvelopeDigest: p.digest, Deliveries: members,
		}
	}

	// 4. Two multi-row inserts in one round trip.
	batch := &pgx.Batch{}
	batch.Queue(qAppendInsertEvents,
		q.DeliverySetVersion, q.DeliverySetDefinitionSchemaVersion, string(q.DeliverySetDefinitionDigestAlgorithmVersion), q.DeliverySetDefinitionDigest,
		string(digest.JCSSHA256V1),
		ids, types, versions, aggTypes, aggIDs, revisions,
		tenantKinds, tenantIDs, workspaceIDs, projectIDs, correlationIDs, causationIDs, operationIDs,
		envelopesText, digestValues, occurred)
	if len(dEventIDs) > 0 {
		batch.Queue(qAppendInsertDeliveries, q.DeliverySetVersion,
			dEventIDs, dDests, dConsumers, dTypes, dSchemas, dProjNames, dProjVersions)
	}
	br := tx.SendBatch(ctx, batch)
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return AppendResult{}, appendError("insert events", err)
	}
	if len(dEventIDs) > 0 {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return AppendResult{}, appendError("insert deliveries", err)
		}
	}
	if err := br.Close(); err != nil {
		return AppendResult{}, appendError("append", err)
	}
	return res, nil
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func appendError(step string, err error) error {
	if db.SQLState(err) == db.CodeUniqueViolation && db.Constraint(err) == "outbox_events_pkey" {
		return fmt.Errorf("%s: %w: %w", step, ErrDuplicateEventID, err)
	}
	return fmt.Errorf("%s: %w", step, TranslateError(err))
}

// mandatoryMembers proves DS-9 for one pair against the active definition:
// the exact pair is applicable, and every destination the first full
// release requires for the pair is a mandatory member. It returns the
// members a delivery row must be created for.
func mandatoryMembers(def *deliveryset.Definition, eventType, schemaVersion string) ([]route.Member, error) {
	members, err := def.MandatoryMembers(eventType, schemaVersion)
	if err != nil {
		return nil, &PairNotInDefinitionError{EventType: eventType, EventSchemaVersion: schemaVersion, Definition: def.Quadruple()}
	}
	for _, dest := range deliveryset.FirstReleaseRoutes[eventType] {
		found := false
		for _, m := range members {
			if m.Destination == dest {
				found = true
				break
			}
		}
		if !found {
			return nil, &MemberMissingError{EventType: eventType, EventSchemaVersion: schemaVersion, Destination: string(dest), Definition: def.Quadruple()}
		}
	}
	return members, nil
}

// definitions caches decoded definitions by their full quadruple. A
// definition is immutable and content-addressed (the digest covers every
// member), so one quadruple names one content in every database; which
// quadruple is active is still read from the database in every append.
var definitions sync.Map // deliveryset.Quadruple → *deliveryset.Definition

// activeDefinitionTx takes the activation lock shared and returns the
// active definition of the transaction's database.
func activeDefinitionTx(ctx context.Context, tx pgx.Tx) (*deliveryset.Definition, error) {
	var (
		q   deliveryset.Quadruple
		alg string
	)
	err := tx.QueryRow(ctx, qAppendActiveDefinition).Scan(&q.DeliverySetVersion, &q.DeliverySetDefinitionSchemaVersion, &alg, &q.DeliverySetDefinitionDigest)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNoActiveDefinition
	}
	if err != nil {
		return nil, fmt.Errorf("read active definition: %w", TranslateError(err))
	}
	q.DeliverySetDefinitionDigestAlgorithmVersion = digest.Algorithm(alg)
	if d, ok := definitions.Load(q); ok {
		return d.(*deliveryset.Definition), nil
	}
	d, err := loadDefinition(ctx, tx, q)
	if err != nil {
		return nil, err
	}
	definitions.Store(q, d)
	return d, nil
}

// loadDefinition reads a registered definition's canonical JSON and decodes
// it with the contracts (which recompute its digest).
func loadDefinition(ctx context.Context, q db.Executor, quad deliveryset.Quadruple) (*deliveryset.Definition, error) {
	var doc string
	err := q.QueryRow(ctx, qDefinitionByQuadruple, quad.DeliverySetVersion, quad.DeliverySetDefinitionSchemaVersion,
		string(quad.DeliverySetDefinitionDigestAlgorithmVersion), quad.DeliverySetDefinitionDigest).Scan(&doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: %d", ErrDefinitionNotFound, quad.DeliverySetVersion)
	}
	if err != nil {
		return nil, fmt.Errorf("read definition %d: %w", quad.DeliverySetVersion, err)
	}
	d, err := deliveryset.Decode([]byte(doc))
	if err != nil {
		return nil, fmt.Errorf("%w: stored definition %d: %w", ErrInvalidDefinition, quad.DeliverySetVersion, err)
	}
	if d.Quadruple() != quad {
		return nil, fmt.Errorf("%w: stored definition %d does not match its quadruple", ErrInvalidDefinition, quad.DeliverySetVersion)
	}
	return d, nil
}
