package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/internal/db"
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
	var inserted bool
	err = tx.QueryRow(ctx, qRegistryInsertDefinition,
		q.DeliverySetVersion, q.DeliverySetDefinitionSchemaVersion, string(q.DeliverySetDefinitionDigestAlgorithmVersion), q.DeliverySetDefinitionDigest,
		source, len(def.ApplicableEvents), string(applicableJSON), len(def.Members), string(canonical)).Scan(&inserted)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
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
		states[i] = "not_applicable"
		if m.ProjectionTarget.Required {
			name, version := m.ProjectionTarget.Name, m.ProjectionTarget.Version
			states[i], names[i], pversions[i] = "required", &name, &version
		}
	}
	if n > 0 {
		if _, err := tx.Exec(ctx, qRegistryInsertMembers, q.DeliverySetVersion,
			types, versions, dests, consumers, mandatory, rtypes, rschemas, states, names, pversions); err != nil {
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
	s, err := scanStored(q.QueryRow(ctx, qRegistryDefinitionByVersion, version))
	if errors.Is(err, pgx.ErrNoRows) {
		return StoredDefinition{}, fmt.Errorf("%w: %d", ErrDefinitionNotFound, version)
	}
	return s, err
}

// ActiveDefinition reads the active definition (ErrNoActiveDefinition). It
// is a plain read for inspection; appends read the active definition under
// the activation lock themselves.
func ActiveDefinition(ctx context.Context, q db.Executor) (StoredDefinition, error) {
	s, err := scanStored(q.QueryRow(ctx, qRegistryActiveDefinition))
	if errors.Is(err, pgx.ErrNoRows) {
		return StoredDefinition{}, ErrNoActiveDefinition
	}
	return s, err
}

// Definitions lists every registered definition by version.
func Definitions(ctx context.Context, q db.Executor) ([]StoredDefinition, error) {
	rows, err := q.Query(ctx, qRegistryListDefinitions)
	if err != nil {
		return nil, fmt.Errorf("list definitions: %w", err)
	}
	defer rows.Close()
	var out []StoredDefinition
	for rows.Next() {
		s, err := scanStored(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func scanStored(row pgx.Row) (StoredDefinition, error) {
	var (
		quad   deliveryset.Quadruple
		alg    string
		status string
		source *string
		doc    string
		s      StoredDefinition
	)
	if err := row.Scan(&quad.DeliverySetVersion, &quad.DeliverySetDefinitionSchemaVersion, &alg, &quad.DeliverySetDefinitionDigest,
		&status, &source, &s.RegisteredAt, &s.ActivatedAt, &s.RetiredAt, &doc); err != nil {
		return StoredDefinition{}, err
	}
	quad.DeliverySetDefinitionDigestAlgorithmVersion = digest.Algorithm(alg)
	def, err := deliveryset.Decode([]byte(doc))
	if err != nil {
		return StoredDefinition{}, fmt.Errorf("%w: stored definition %d: %w", ErrInvalidDefinition, quad.DeliverySetVersion, err)
	}
	if def.Quadruple() != quad {
		return StoredDefinition{}, fmt.Errorf("%w: stored definition %d does not match its quadruple", ErrInvalidDefinition, quad.DeliverySetVersion)
	}
	s.Definition, s.Status, s.CanonicalJSON = def, DefinitionStatus(status), []byte(doc)
	if source != nil {
		s.SourceRelease = *source
	}
	return s, nil
}
