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

var qSettlementReservationCurrent = statements.Get("settlement_reservation_current_select")

// ReadReservationSettlementInputs returns the Current
// SettlementInputSnapshot@1 of every settlement dimension of one billing
// reservation's attempts (the platform API's getReservationSettlementInputs),
// sorted by settlement dimension id; empty when Metering has no settlement
// input for the reservation (yet, or a run without attempts). Each is
// verified like ReadCurrentSettlementInput: the body decodes strictly, its
// digest recomputes, and it names the row's five-tuple, dimension, attempt
// and this reservation (fail closed: ErrSettlementInputCorrupt).
//
// One statement, so the set is one consistent view; it probes the
// reservation's partial index (one entry per dimension), then each pointer
// and its snapshot by key: it reads no more as the dimensions' histories
// grow (BI-1).
func ReadReservationSettlementInputs(ctx context.Context, q db.Executor, billingReservationID string) ([]*meteringread.SettlementInput, error) {
	if !strict.IsUUID(billingReservationID) {
		return nil, fmt.Errorf("%w: reservation id %q", ErrNoSettlementInput, billingReservationID)
	}
	rows, err := q.Query(ctx, qSettlementReservationCurrent, pgx.NamedArgs{"billing_reservation_id": billingReservationID})
	if err != nil {
		return nil, fmt.Errorf("read reservation settlement inputs %s: %w", billingReservationID, err)
	}
	type row struct {
		settlementRow
		SettlementDimensionID string `db:"settlement_dimension_id"`
		ExecutionAttemptID    string `db:"execution_attempt_id"`
		BillingReservationID  string `db:"billing_reservation_id"`
		ReconciliationState   string `db:"reconciliation_state"`
	}
	found, err := pgx.CollectRows(rows, pgx.RowToStructByName[row])
	if err != nil {
		return nil, fmt.Errorf("read reservation settlement inputs %s: %w", billingReservationID, err)
	}
	out := make([]*meteringread.SettlementInput, 0, len(found))
	for _, r := range found {
		s, err := settlement.Decode([]byte(r.SnapshotBody))
		if err != nil {
			return nil, fmt.Errorf("%w: %s v%d: %w", ErrSettlementInputCorrupt, r.SettlementDimensionID, r.StateVersion, err)
		}
		ref := settlement.Ref{StateVersion: r.StateVersion, Snapshot: strict.Quadruple{Ref: r.SnapshotRef, SchemaVersion: r.SnapshotSchemaVersion,
			DigestAlgorithmVersion: digest.Algorithm(r.SnapshotDigestAlgorithmVersion), Digest: r.SnapshotDigest}}
		if s.Current() != ref || s.SettlementDimensionID != r.SettlementDimensionID || s.ExecutionAttemptID != r.ExecutionAttemptID ||
			s.BillingReservationID != billingReservationID || r.BillingReservationID != billingReservationID ||
			s.ReconciliationState != r.ReconciliationState {
			return nil, fmt.Errorf("%w: %s v%d: body and row differ", ErrSettlementInputCorrupt, r.SettlementDimensionID, r.StateVersion)
		}
		out = append(out, &meteringread.SettlementInput{Ref: ref, Body: []byte(r.SnapshotBody), Snapshot: s})
	}
	return out, nil
}
