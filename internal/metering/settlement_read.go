package metering

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/ownerread/meteringread"
)

var (
	qSettlementCurrent  = statements.Get("settlement_current_select")
	qSettlementSnapshot = statements.Get("settlement_snapshot_select")
)

// ErrNoSettlementInput: the settlement dimension has no snapshot (yet).
var ErrNoSettlementInput = errors.New("metering: settlement dimension has no settlement input")

// ErrSettlementInputCorrupt: a stored snapshot does not decode or recompute,
// or does not match its row (fail closed: never answered as current).
var ErrSettlementInputCorrupt = errors.New("metering: stored settlement input does not verify")

type settlementRow struct {
	StateVersion                   int64  `db:"state_version"`
	SnapshotRef                    string `db:"snapshot_ref"`
	SnapshotSchemaVersion          string `db:"snapshot_schema_version"`
	SnapshotDigestAlgorithmVersion string `db:"snapshot_digest_algorithm_version"`
	SnapshotDigest                 string `db:"snapshot_digest"`
	SnapshotBody                   string `db:"snapshot_body"`
}

// ReadCurrentSettlementInput returns the Current SettlementInputSnapshot@1 of
// a settlement dimension (envelope.SettlementDimensionID), verified: the
// body decodes strictly, its digest recomputes and it equals the row's
// five-tuple and dimension. ErrNoSettlementInput when the dimension has none.
// Run it inside a transaction to read it consistently with other reads.
func ReadCurrentSettlementInput(ctx context.Context, q db.Executor, settlementDimensionID string) (*meteringread.SettlementInput, error) {
	return readSettlementInput(ctx, q, qSettlementCurrent, pgx.NamedArgs{"settlement_dimension_id": settlementDimensionID}, settlementDimensionID)
}

// ReadSettlementInputAt returns the dimension's snapshot at one state
// version (its lineage), verified like ReadCurrentSettlementInput.
func ReadSettlementInputAt(ctx context.Context, q db.Executor, settlementDimensionID string, stateVersion int64) (*meteringread.SettlementInput, error) {
	return readSettlementInput(ctx, q, qSettlementSnapshot, pgx.NamedArgs{"settlement_dimension_id": settlementDimensionID,
		"state_version": stateVersion}, settlementDimensionID)
}

func readSettlementInput(ctx context.Context, q db.Executor, sql string, args pgx.NamedArgs, dimensionID string) (*meteringread.SettlementInput, error) {
	if !strict.IsUUID(dimensionID) {
		return nil, fmt.Errorf("%w: settlement dimension id %q", ErrNoSettlementInput, dimensionID)
	}
	rows, err := q.Query(ctx, sql, args)
	if err != nil {
		return nil, fmt.Errorf("read settlement input %s: %w", dimensionID, err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[settlementRow])
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: %s", ErrNoSettlementInput, dimensionID)
	}
	if err != nil {
		return nil, fmt.Errorf("read settlement input %s: %w", dimensionID, err)
	}
	s, err := settlement.Decode([]byte(r.SnapshotBody))
	if err != nil {
		return nil, fmt.Errorf("%w: %s v%d: %w", ErrSettlementInputCorrupt, dimensionID, r.StateVersion, err)
	}
	ref := settlement.Ref{StateVersion: r.StateVersion, Snapshot: strict.Quadruple{Ref: r.SnapshotRef, SchemaVersion: r.SnapshotSchemaVersion,
		DigestAlgorithmVersion: digest.Algorithm(r.SnapshotDigestAlgorithmVersion), Digest: r.SnapshotDigest}}
	if s.Current() != ref || s.SettlementDimensionID != dimensionID {
		return nil, fmt.Errorf("%w: %s v%d: body and row differ", ErrSettlementInputCorrupt, dimensionID, r.StateVersion)
	}
	return &meteringread.SettlementInput{Ref: ref, Body: []byte(r.SnapshotBody), Snapshot: s}, nil
}
