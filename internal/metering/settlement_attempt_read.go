package metering

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/ownerread/meteringread"
)

var qSettlementAttemptCurrent = statements.Get("settlement_attempt_current_select")

// ReadAttemptSettlementInputs returns the Current SettlementInputSnapshot@1
// of every charge dimension of one attempt, verified like
// ReadCurrentSettlementInput, sorted by charge dimension key; empty when the
// attempt has no settlement input yet. The usage work writes every
// dimension of an attempt in one transaction, so the set is whole at any
// read (the Billing finalization worker enumerates its manifest from it).
func ReadAttemptSettlementInputs(ctx context.Context, q db.Executor, executionAttemptID string) ([]*meteringread.SettlementInput, error) {
	if !strict.IsUUID(executionAttemptID) {
		return nil, fmt.Errorf("%w: attempt id %q", ErrNoSettlementInput, executionAttemptID)
	}
	rows, err := q.Query(ctx, qSettlementAttemptCurrent, pgx.NamedArgs{"execution_attempt_id": executionAttemptID})
	if err != nil {
		return nil, fmt.Errorf("read attempt settlement inputs %s: %w", executionAttemptID, err)
	}
	type row struct {
		settlementRow
		SettlementDimensionID string `db:"settlement_dimension_id"`
	}
	found, err := pgx.CollectRows(rows, pgx.RowToStructByName[row])
	if err != nil {
		return nil, fmt.Errorf("read attempt settlement inputs %s: %w", executionAttemptID, err)
	}
	out := make([]*meteringread.SettlementInput, 0, len(found))
	for _, r := range found {
		s, err := settlement.Decode([]byte(r.SnapshotBody))
		if err != nil {
			return nil, fmt.Errorf("%w: %s v%d: %w", ErrSettlementInputCorrupt, r.SettlementDimensionID, r.StateVersion, err)
		}
		ref := settlement.Ref{StateVersion: r.StateVersion, Snapshot: strict.Quadruple{Ref: r.SnapshotRef, SchemaVersion: r.SnapshotSchemaVersion,
			DigestAlgorithmVersion: digest.Algorithm(r.SnapshotDigestAlgorithmVersion), Digest: r.SnapshotDigest}}
		if s.Current() != ref || s.SettlementDimensionID != r.SettlementDimensionID || s.ExecutionAttemptID != executionAttemptID {
			return nil, fmt.Errorf("%w: %s v%d: body and row differ", ErrSettlementInputCorrupt, r.SettlementDimensionID, r.StateVersion)
		}
		out = append(out, &meteringread.SettlementInput{Ref: ref, Body: []byte(r.SnapshotBody), Snapshot: s})
	}
	return out, nil
}
