package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox/dbsqlc"
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
//  3. the exact pair must be in the database's active definition, with a
//     mandatory member for every destination the appender's release policy
//     requires for the pair (DS-9);
//  4. all events are inserted with the frozen definition quadruple, then one
//     pending delivery row per mandatory member (two multi-row statements in
//     one round trip), each guarded by "this quadruple is the active
//     definition", read under the activation lock, which the statements take
//     shared until the end of the transaction (so a cutover waits for it).
//
// Steps 3 and 4 first use the definition last seen active in this database
// (a process-wide cache of immutable, content-addressed definitions); when
// the guarded inserts find another definition active they wrote nothing,
// and AppendTx reads the active definition under the lock and proves the
// events against it instead.
//
// At COMMIT a deferred constraint trigger re-proves, per event, that the
// delivery rows equal the frozen definition's mandatory members; a failure
// there (SQLSTATE OW004/OW006) fails the caller's commit. Errors wrap the
// sentinels of errors.go. AppendTx never commits or rolls back: on error the
// caller's transaction must be rolled back.
func (a *Appender) AppendTx(ctx context.Context, tx pgx.Tx, events ...envelope.Envelope) (AppendResult, error) {
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
	prep, err := prepareEvents(envs)
	if err != nil {
		return AppendResult{}, err
	}

	// 3.+4. Prove DS-9 against the active definition and insert. The
	// definition last seen active in this database is tried first: its
	// inserts only take effect if it is still the active one under the
	// activation lock (one round trip). Otherwise the active definition is
	// read under the lock and the events are proved against it.
	key := databaseKey(tx)
	if guess, ok := lastActive.Load(key); ok {
		def := guess.(*deliveryset.Definition)
		if rows, err := a.buildRows(def, prep); err == nil {
			inserted, err := insertRows(ctx, tx, rows)
			if err != nil {
				return AppendResult{}, err
			}
			if inserted {
				return rows.result, nil
			}
		}
	}
	def, err := activeDefinitionTx(ctx, tx)
	if err != nil {
		return AppendResult{}, err
	}
	lastActive.Store(key, def)
	rows, err := a.buildRows(def, prep)
	if err != nil {
		return AppendResult{}, err
	}
	inserted, err := insertRows(ctx, tx, rows)
	if err != nil {
		return AppendResult{}, err
	}
	if !inserted {
		// Cannot happen: the activation lock is held since the read above.
		return AppendResult{}, fmt.Errorf("%w: active definition changed under the activation lock", ErrNoActiveDefinition)
	}
	return rows.result, nil
}

// prepareEvents strictly validates and digests every envelope (ids already
// set) and rejects duplicate event ids.
func prepareEvents(envs []envelope.Envelope) ([]prepared, error) {
	prep := make([]prepared, len(envs))
	seen := make(map[string]int, len(envs))
	for i := range envs {
		// One encoding and one strict decode per event: the stored bytes
		// and the digest are the canonical bytes the decoder accepted.
		e, canonical, err := envelope.BuildCanonical(envs[i])
		if err != nil {
			return nil, &InvalidEnvelopeError{Index: i, EventID: envs[i].EventID, Err: err}
		}
		if j, dup := seen[e.EventID]; dup {
			return nil, fmt.Errorf("%w: events %d and %d share %s", ErrDuplicateEventID, j, i, e.EventID)
		}
		seen[e.EventID] = i
		d, err := digest.OfCanonical(envelope.DigestAlgorithm, canonical)
		if err != nil {
			return nil, &InvalidEnvelopeError{Index: i, EventID: e.EventID, Err: err}
		}
		prep[i] = prepared{env: e, canonical: canonical, digest: d}
	}
	return prep, nil
}

// prepared is one validated, digested event.
type prepared struct {
	env       *envelope.Envelope
	canonical []byte
	digest    digest.Digest
}

// appendRows are the column arrays of the two multi-row inserts.
type appendRows struct {
	quad   deliveryset.Quadruple
	result AppendResult

	ids, types, versions, aggTypes, aggIDs []string
	revisions                              []int64
	tenantKinds, tenantIDs, workspaceIDs   []string
	projectIDs, causationIDs, operationIDs []*string
	correlationIDs, envelopes, digests     []string
	occurred                               []time.Time

	dEventIDs, dDests, dConsumers, dTypes, dSchemas []string
	dProjNames                                      []*string
	dProjVersions                                   []*int64
}

// buildRows proves DS-9 for every event against def and lays out the rows.
func (a *Appender) buildRows(def *deliveryset.Definition, prep []prepared) (*appendRows, error) {
	n := len(prep)
	q := def.Quadruple()
	r := &appendRows{
		quad:   q,
		result: AppendResult{Definition: q, Events: make([]AppendedEvent, n)},
		ids:    make([]string, n), types: make([]string, n), versions: make([]string, n),
		aggTypes: make([]string, n), aggIDs: make([]string, n), revisions: make([]int64, n),
		tenantKinds: make([]string, n), tenantIDs: make([]string, n), workspaceIDs: make([]string, n),
		projectIDs: make([]*string, n), causationIDs: make([]*string, n), operationIDs: make([]*string, n),
		correlationIDs: make([]string, n), envelopes: make([]string, n), digests: make([]string, n),
		occurred: make([]time.Time, n),
	}
	for i, p := range prep {
		e := p.env
		members, err := a.mandatoryMembers(def, e.EventType, e.EventSchemaVersion)
		if err != nil {
			return nil, err
		}
		if p.digest.Algorithm != digest.JCSSHA256V1 {
			// The schema stores only registered algorithm versions; a new one
			// needs a migration first.
			return nil, fmt.Errorf("%w: envelope digest algorithm %s not storable", ErrInvalidEnvelope, p.digest.Algorithm)
		}
		r.ids[i], r.types[i], r.versions[i] = e.EventID, e.EventType, e.EventSchemaVersion
		r.aggTypes[i], r.aggIDs[i], r.revisions[i] = e.AggregateType, e.AggregateID, e.AggregateRevision
		r.tenantKinds[i], r.tenantIDs[i], r.workspaceIDs[i] = e.TenantKind, e.TenantID, e.WorkspaceID
		r.projectIDs[i], r.causationIDs[i], r.operationIDs[i] = optional(e.ProjectID), optional(e.CausationID), optional(e.OperationID)
		r.correlationIDs[i], r.envelopes[i], r.digests[i] = e.CorrelationID, string(p.canonical), p.digest.Value
		r.occurred[i] = e.OccurredAt
		for _, m := range members {
			r.dEventIDs = append(r.dEventIDs, e.EventID)
			r.dDests = append(r.dDests, string(m.Destination))
			r.dConsumers = append(r.dConsumers, m.ConsumerName)
			r.dTypes = append(r.dTypes, m.ExpectedReceiptType)
			r.dSchemas = append(r.dSchemas, m.ExpectedReceiptSchemaVersion)
			if m.ProjectionTarget.Required {
				name, version := m.ProjectionTarget.Name, m.ProjectionTarget.Version
				r.dProjNames = append(r.dProjNames, &name)
				r.dProjVersions = append(r.dProjVersions, &version)
			} else {
				r.dProjNames = append(r.dProjNames, nil)
				r.dProjVersions = append(r.dProjVersions, nil)
			}
		}
		r.result.Events[i] = AppendedEvent{
			EventID: e.EventID, EventType: e.EventType, EventSchemaVersion: e.EventSchemaVersion,
			EnvelopeDigest: p.digest, Deliveries: members,
		}
	}
	return r, nil
}

// insertRows sends both inserts in one round trip. It reports false (and
// wrote nothing) when r's definition is not the active one.
func insertRows(ctx context.Context, tx pgx.Tx, r *appendRows) (bool, error) {
	q := r.quad
	frozen := pgx.NamedArgs{
		"delivery_set_version":                             q.DeliverySetVersion,
		"delivery_set_definition_schema_version":           q.DeliverySetDefinitionSchemaVersion,
		"delivery_set_definition_digest_algorithm_version": string(q.DeliverySetDefinitionDigestAlgorithmVersion),
		"delivery_set_definition_digest":                   q.DeliverySetDefinitionDigest,
	}
	batch := &pgx.Batch{}
	batch.Queue(stEventInsert.SQL, stEventInsert.Args(with(frozen, pgx.NamedArgs{
		"event_envelope_digest_algorithm_version": string(digest.JCSSHA256V1),
		"event_ids":              r.ids,
		"event_types":            r.types,
		"schema_versions":        r.versions,
		"aggregate_types":        r.aggTypes,
		"aggregate_ids":          r.aggIDs,
		"aggregate_revisions":    r.revisions,
		"tenant_kinds":           r.tenantKinds,
		"tenant_ids":             r.tenantIDs,
		"workspace_ids":          r.workspaceIDs,
		"project_ids":            r.projectIDs,
		"correlation_ids":        r.correlationIDs,
		"causation_ids":          r.causationIDs,
		"operation_ids":          r.operationIDs,
		"event_envelopes":        r.envelopes,
		"event_envelope_sha256s": r.digests,
		"occurred_ats":           r.occurred,
	}))...)
	if len(r.dEventIDs) > 0 {
		batch.Queue(stDeliveryInsert.SQL, stDeliveryInsert.Args(with(frozen, pgx.NamedArgs{
			"event_ids":                        r.dEventIDs,
			"destinations":                     r.dDests,
			"consumer_names":                   r.dConsumers,
			"expected_receipt_types":           r.dTypes,
			"expected_receipt_schema_versions": r.dSchemas,
			"required_projection_names":        r.dProjNames,
			"required_projection_versions":     r.dProjVersions,
		}))...)
	}
	br := tx.SendBatch(ctx, batch)
	tag, err := br.Exec()
	if err != nil {
		_ = br.Close()
		return false, appendError("insert events", err)
	}
	events := tag.RowsAffected()
	var deliveries int64
	if len(r.dEventIDs) > 0 {
		tag, err := br.Exec()
		if err != nil {
			_ = br.Close()
			return false, appendError("insert deliveries", err)
		}
		deliveries = tag.RowsAffected()
	}
	if err := br.Close(); err != nil {
		return false, appendError("append", err)
	}
	switch {
	case events == int64(len(r.ids)) && deliveries == int64(len(r.dEventIDs)):
		return true, nil
	case events == 0 && deliveries == 0:
		return false, nil
	default:
		return false, fmt.Errorf("append: inserted %d of %d events and %d of %d deliveries", events, len(r.ids), deliveries, len(r.dEventIDs))
	}
}

// lastActive remembers, per database, the definition last read as active:
// databaseKey → *deliveryset.Definition. It is only a guess that saves a
// round trip; the inserts take effect only if it is still active.
var lastActive sync.Map

func databaseKey(tx pgx.Tx) string {
	cfg := tx.Conn().Config()
	return fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database)
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func appendError(step string, err error) error {
	if db.SQLState(err) == pgerrcode.UniqueViolation && db.Constraint(err) == "outbox_events_pkey" {
		return fmt.Errorf("%s: %w: %w", step, ErrDuplicateEventID, err)
	}
	return fmt.Errorf("%s: %w", step, TranslateError(err))
}

// mandatoryMembers proves DS-9 for one pair against the active definition:
// the exact pair is applicable, and every destination the release policy
// requires for the pair is a mandatory member. It returns the members a
// delivery row must be created for.
func (a *Appender) mandatoryMembers(def *deliveryset.Definition, eventType, schemaVersion string) ([]route.Member, error) {
	members, err := def.MandatoryMembers(eventType, schemaVersion)
	if err != nil {
		return nil, &PairNotInDefinitionError{EventType: eventType, EventSchemaVersion: schemaVersion, Definition: def.Quadruple()}
	}
	for _, dest := range a.policy.required[eventType] {
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

// quadrupleRow is a definition quadruple as the registry stores it.
type quadrupleRow struct {
	DeliverySetVersion                          int64  `db:"delivery_set_version"`
	DeliverySetDefinitionSchemaVersion          string `db:"delivery_set_definition_schema_version"`
	DeliverySetDefinitionDigestAlgorithmVersion string `db:"delivery_set_definition_digest_algorithm_version"`
	DeliverySetDefinitionDigest                 string `db:"delivery_set_definition_digest"`
}

func (r quadrupleRow) quadruple() deliveryset.Quadruple {
	return deliveryset.Quadruple{
		DeliverySetVersion:                          r.DeliverySetVersion,
		DeliverySetDefinitionSchemaVersion:          r.DeliverySetDefinitionSchemaVersion,
		DeliverySetDefinitionDigestAlgorithmVersion: digest.Algorithm(r.DeliverySetDefinitionDigestAlgorithmVersion),
		DeliverySetDefinitionDigest:                 r.DeliverySetDefinitionDigest,
	}
}

// activeDefinitionTx takes the activation lock shared and returns the
// active definition of the transaction's database.
func activeDefinitionTx(ctx context.Context, tx pgx.Tx) (*deliveryset.Definition, error) {
	rows, _ := tx.Query(ctx, sqlDefinitionLockActive)
	row, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[quadrupleRow])
	if err = db.NotFound(err); errors.Is(err, db.ErrNotFound) {
		return nil, ErrNoActiveDefinition
	}
	if err != nil {
		return nil, fmt.Errorf("read active definition: %w", TranslateError(err))
	}
	q := row.quadruple()
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
	doc, err := queries.DefinitionByQuadruple(ctx, q, dbsqlc.DefinitionByQuadrupleParams{
		DeliverySetVersion:                          quad.DeliverySetVersion,
		DeliverySetDefinitionSchemaVersion:          quad.DeliverySetDefinitionSchemaVersion,
		DeliverySetDefinitionDigestAlgorithmVersion: string(quad.DeliverySetDefinitionDigestAlgorithmVersion),
		DeliverySetDefinitionDigest:                 quad.DeliverySetDefinitionDigest,
	})
	if err = db.NotFound(err); errors.Is(err, db.ErrNotFound) {
		return nil, fmt.Errorf("%w: %d", ErrDefinitionNotFound, quad.DeliverySetVersion)
	}
	if err != nil {
		return nil, fmt.Errorf("read definition %d: %w", quad.DeliverySetVersion, err)
	}
	return decodeStored(quad, doc)
}

// decodeStored decodes a stored definition and checks it is the quadruple
// it was stored under.
func decodeStored(quad deliveryset.Quadruple, doc string) (*deliveryset.Definition, error) {
	d, err := deliveryset.Decode([]byte(doc))
	if err != nil {
		return nil, fmt.Errorf("%w: stored definition %d: %w", ErrInvalidDefinition, quad.DeliverySetVersion, err)
	}
	if d.Quadruple() != quad {
		return nil, fmt.Errorf("%w: stored definition %d does not match its quadruple", ErrInvalidDefinition, quad.DeliverySetVersion)
	}
	return d, nil
}

// with returns the union of named argument sets (later sets win).
func with(sets ...pgx.NamedArgs) pgx.NamedArgs {
	out := pgx.NamedArgs{}
	for _, s := range sets {
		for k, v := range s {
			out[k] = v
		}
	}
	return out
}
