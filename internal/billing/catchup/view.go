package catchup

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/internal/db"
)

// View is one reservation's settlement catch-up as `inspect` and the
// admin page can show it: each dimension's fence (state, settled amount,
// evaluated input, watermark), the transitions, and the late settlement
// exposures — open and blocked, never charged.
type View struct {
	Fences      []FenceView
	Transitions []TransitionView
	Exposures   []ExposureView
}

// FenceView is one dimension's fence.
type FenceView struct {
	SettlementDimensionID     string    `db:"settlement_dimension_id"`
	ChargeDimensionKey        string    `db:"charge_dimension_key"`
	ExecutionAttemptID        string    `db:"execution_attempt_id"`
	CoordinationState         string    `db:"coordination_state"`
	FenceRevision             int64     `db:"fence_revision"`
	SettlementStateRevision   int64     `db:"settlement_state_revision"`
	ActiveWorkGeneration      int64     `db:"active_work_generation"`
	SettledAmount             string    `db:"settled_amount"`
	LastEvaluatedStateVersion int64     `db:"last_evaluated_state_version"`
	WatermarkStateVersion     int64     `db:"watermark_state_version"` // 0: none
	UpdatedAt                 time.Time `db:"updated_at"`
}

// TransitionView is one transition.
type TransitionView struct {
	SettlementDimensionID       string    `db:"settlement_dimension_id"`
	FromSettlementStateRevision int64     `db:"from_settlement_state_revision"`
	ToSettlementStateRevision   int64     `db:"to_settlement_state_revision"`
	TransitionKind              string    `db:"transition_kind"`
	TransitionAmount            string    `db:"transition_amount"`
	SettledAmountBefore         string    `db:"settled_amount_before"`
	SettledAmountAfter          string    `db:"settled_amount_after"`
	SettlementInputStateVersion int64     `db:"settlement_input_state_version"`
	TransitionRef               string    `db:"transition_ref"`
	EventID                     string    `db:"event_id"`
	CommittedAt                 time.Time `db:"committed_at"`
}

// ExposureView is one late settlement exposure.
type ExposureView struct {
	LateSettlementExposureID string    `db:"late_settlement_exposure_id"`
	SettlementDimensionID    string    `db:"settlement_dimension_id"`
	SettlementStateRevision  int64     `db:"settlement_state_revision"`
	ExposureAmount           string    `db:"exposure_amount"`
	ExposureState            string    `db:"exposure_state"`
	AutomaticCharge          string    `db:"automatic_charge"`
	ExposureRef              string    `db:"exposure_ref"`
	RecordedAt               time.Time `db:"recorded_at"`
}

// Lookup reads one reservation's catch-up by exact id (read
// only, index-backed; empty before its finalization).
func Lookup(ctx context.Context, q db.Executor, reservationID string) (View, error) {
	args := pgx.NamedArgs{"billing_reservation_id": reservationID}
	var v View
	var err error
	if v.Fences, err = collectView[FenceView](ctx, q, qCatchUpViewFences, args); err != nil {
		return View{}, fmt.Errorf("read catch-up fences: %w", err)
	}
	if v.Transitions, err = collectView[TransitionView](ctx, q, qCatchUpViewTransitions, args); err != nil {
		return View{}, fmt.Errorf("read settlement transitions: %w", err)
	}
	if v.Exposures, err = collectView[ExposureView](ctx, q, qCatchUpViewExposures, args); err != nil {
		return View{}, fmt.Errorf("read late settlement exposures: %w", err)
	}
	return v, nil
}

// OpenExposures counts the open, blocked late settlement exposures and sums
// their amounts (exact decimal text) for summaries.
func OpenExposures(ctx context.Context, q db.Executor) (count int64, amount string, err error) {
	if err := q.QueryRow(ctx, qCatchUpViewOpenExposures).Scan(&count, &amount); err != nil {
		return 0, "", fmt.Errorf("count open exposures: %w", err)
	}
	return count, amount, nil
}

func collectView[T any](ctx context.Context, q db.Executor, sql string, args pgx.NamedArgs) ([]T, error) {
	rows, err := q.Query(ctx, sql, args)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByName[T])
}
