package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox/dbsqlc"
)

// DefinitionStatus is registry metadata (not part of the definition).
type DefinitionStatus string

const (
	StatusRegistered DefinitionStatus = "registered"
	StatusActive     DefinitionStatus = "active"
	StatusRetired    DefinitionStatus = "retired"
)

// StoredDefinition is a registered definition with its registry metadata.
type StoredDefinition struct {
	Definition    *deliveryset.Definition
	Status        DefinitionStatus
	SourceRelease string
	RegisteredAt  time.Time
	ActivatedAt   *time.Time
	RetiredAt     *time.Time
	// CanonicalJSON is the RFC 8785 form of the whole definition as stored.
	CanonicalJSON []byte
}

// RegisterOpts are optional registration metadata.
type RegisterOpts struct {
	// SourceRelease names the release the definition came from (metadata).
	SourceRelease string
}

// RegisterResult tells whether RegisterTx inserted the definition or found
// the identical one already registered.
type RegisterResult struct {
	Quadruple deliveryset.Quadruple
	Inserted  bool
}

// RegisterTx registers a definition by insert-or-compare on its full
// quadruple (DS-6): a new version is inserted with its immutable members; an
// already registered version must be byte-identical (same schema version,
// algorithm, digest and canonical candidate), otherwise the result is a
// *DefinitionConflictError. Concurrent registrations of one definition
// converge to one row. Registration never activates.
func RegisterTx(ctx context.Context, tx pgx.Tx, def *deliveryset.Definition, opts RegisterOpts) (RegisterResult, error) {
	if def == nil {
		return RegisterResult{}, fmt.Errorf("%w: nil definition", ErrInvalidDefinition)
	}
	if err := def.Validate(); err != nil {
		return RegisterResult{}, fmt.Errorf("%w: %w", ErrInvalidDefinition, err)
	}
	canonical, err := def.Canonical()
	if err != nil {
		return RegisterResult{}, fmt.Errorf("%w: %w", ErrInvalidDefinition, err)
	}
	q := def.Quadruple()
	applicable := make([]map[string]string, len(def.ApplicableEvents))
	for i, e := range def.ApplicableEvents {
		applicable[i] = map[string]string{"eventType": e.EventType, "eventSchemaVersion": e.EventSchemaVersion}
	}
	applicableJSON, err := json.Marshal(applicable)
	if err != nil {
		return RegisterResult{}, err
	}
	var source *string
	if opts.SourceRelease != "" {
		source = &opts.SourceRelease
	}
	_, err = queries.DefinitionInsert(ctx, tx, dbsqlc.DefinitionInsertParams{
		DeliverySetVersion:                          q.DeliverySetVersion,
		DeliverySetDefinitionSchemaVersion:          q.DeliverySetDefinitionSchemaVersion,
		DeliverySetDefinitionDigestAlgorithmVersion: string(q.DeliverySetDefinitionDigestAlgorithmVersion),
		DeliverySetDefinitionDigest:                 q.DeliverySetDefinitionDigest,
		SourceRelease:                               source,
		ApplicableEventCount:                        int32(len(def.ApplicableEvents)),
		ApplicableEvents:                            applicableJSON,
		MemberCount:                                 int32(len(def.Members)),
		DefinitionCanonicalJson:                     string(canonical),
	})
	switch err = db.NotFound(err); {
	case errors.Is(err, db.ErrNotFound):
		// Compare with the stored definition.
		stored, err := DefinitionByVersion(ctx, tx, q.DeliverySetVersion)
		if err != nil {
			return RegisterResult{}, err
		}
		if stored.Definition.Quadruple() != q || string(stored.CanonicalJSON) != string(canonical) {
			return RegisterResult{}, &DefinitionConflictError{Stored: stored.Definition.Quadruple(), Incoming: q}
		}
		return RegisterResult{Quadruple: q}, nil
	case err != nil:
		return RegisterResult{}, fmt.Errorf("register definition %d: %w", q.DeliverySetVersion, TranslateError(err))
	}

	n := len(def.Members)
	var (
		types, versions, dests, consumers, rtypes, rschemas, states = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		mandatory                                                   = make([]bool, n)
		names                                                       = make([]*string, n)
		pversions                                                   = make([]*int64, n)
	)
	for i, m := range def.Members {
		types[i], versions[i], dests[i], consumers[i] = m.EventType, m.EventSchemaVersion, string(m.Destination), m.ConsumerName
		rtypes[i], rschemas[i], mandatory[i] = m.ExpectedReceiptType, m.ExpectedReceiptSchemaVersion, m.Mandatory
		states[i] = projectionNotApplicable
		if m.ProjectionTarget.Required {
			name, version := m.ProjectionTarget.Name, m.ProjectionTarget.Version
			states[i], names[i], pversions[i] = projectionRequired, &name, &version
		}
	}
	if n > 0 {
		if _, err := tx.Exec(ctx, sqlMemberInsert, pgx.NamedArgs{
			"delivery_set_version":             q.DeliverySetVersion,
			"event_types":                      types,
			"schema_versions":                  versions,
			"destinations":                     dests,
			"consumer_names":                   consumers,
			"mandatory":                        mandatory,
			"expected_receipt_types":           rtypes,
			"expected_receipt_schema_versions": rschemas,
			"projection_target_states":         states,
			"projection_names":                 names,
			"projection_versions":              pversions,
		}); err != nil {
			return RegisterResult{}, fmt.Errorf("register members of definition %d: %w", q.DeliverySetVersion, TranslateError(err))
		}
	}
	return RegisterResult{Quadruple: q, Inserted: true}, nil
}

// Register is RegisterTx in its own transaction.
func Register(ctx context.Context, pool db.Beginner, def *deliveryset.Definition, opts RegisterOpts) (RegisterResult, error) {
	return db.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (RegisterResult, error) {
		return RegisterTx(ctx, tx, def, opts)
	})
}

// DefinitionByVersion reads one registered definition (ErrDefinitionNotFound).
func DefinitionByVersion(ctx context.Context, q db.Executor, version int64) (StoredDefinition, error) {
	row, err := queries.DefinitionByVersion(ctx, q, version)
	if err = db.NotFound(err); errors.Is(err, db.ErrNotFound) {
		return StoredDefinition{}, fmt.Errorf("%w: %d", ErrDefinitionNotFound, version)
	}
	if err != nil {
		return StoredDefinition{}, fmt.Errorf("read definition %d: %w", version, err)
	}
	return storedDefinition(storedRow(row))
}

// ActiveDefinition reads the active definition (ErrNoActiveDefinition). It
// is a plain read for inspection; appends read the active definition under
// the activation lock themselves.
func ActiveDefinition(ctx context.Context, q db.Executor) (StoredDefinition, error) {
	row, err := queries.DefinitionActive(ctx, q)
	if err = db.NotFound(err); errors.Is(err, db.ErrNotFound) {
		return StoredDefinition{}, ErrNoActiveDefinition
	}
	if err != nil {
		return StoredDefinition{}, fmt.Errorf("read active definition: %w", err)
	}
	return storedDefinition(storedRow(row))
}

// Definitions lists every registered definition by version.
func Definitions(ctx context.Context, q db.Executor) ([]StoredDefinition, error) {
	rows, err := queries.DefinitionList(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("list definitions: %w", err)
	}
	out := make([]StoredDefinition, 0, len(rows))
	for _, row := range rows {
		s, err := storedDefinition(storedRow(row))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// storedRow is the registry row the three definition reads return (sqlc
// generates one identical struct per query).
type storedRow dbsqlc.DefinitionByVersionRow

func storedDefinition(r storedRow) (StoredDefinition, error) {
	quad := quadrupleRow{r.DeliverySetVersion, r.DeliverySetDefinitionSchemaVersion,
		r.DeliverySetDefinitionDigestAlgorithmVersion, r.DeliverySetDefinitionDigest}.quadruple()
	def, err := decodeStored(quad, r.DefinitionCanonicalJson)
	if err != nil {
		return StoredDefinition{}, err
	}
	s := StoredDefinition{
		Definition: def, Status: DefinitionStatus(r.Status), RegisteredAt: r.RegisteredAt,
		ActivatedAt: r.ActivatedAt, RetiredAt: r.RetiredAt, CanonicalJSON: []byte(r.DefinitionCanonicalJson),
	}
	if r.SourceRelease != nil {
		s.SourceRelease = *r.SourceRelease
	}
	return s, nil
}
