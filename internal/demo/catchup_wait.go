package demo

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/server"
)

var (
	qCatchUpPending        = statements.Get("catch_up_pending")
	qSettlementInputLatest = statements.Get("settlement_input_latest")
)

// catchUpWaits classifies the catch-up fences pending verification: open
// (the worker can still settle the newest input) or waiting visibly for
// the owner's fix because the newest post-finality input is not settleable (reconciliation_required or
// awaiting_evidence: e.g. the provider's conflicting report reached
// Metering after the finalization).
// The worker verifies such a Work again and writes nothing, so the demo must
// not wait for it. waiting counts them by the input's state.
func catchUpWaits(ctx context.Context, pools server.Pools) (open int, waiting map[string]int64, err error) {
	core, ok := pools[boundary.Core]
	if !ok {
		return 0, nil, fmt.Errorf("pending catch-up fences: no core database")
	}
	rows, err := core.Query(ctx, qCatchUpPending)
	if err != nil {
		return 0, nil, fmt.Errorf("pending catch-up fences: %w", err)
	}
	dims, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, nil, fmt.Errorf("pending catch-up fences: %w", err)
	}
	waiting = map[string]int64{}
	m, ok := pools[boundary.Metering]
	if !ok || len(dims) == 0 {
		return len(dims), waiting, nil
	}
	rows, err = m.Query(ctx, qSettlementInputLatest, dims)
	if err != nil {
		return 0, nil, fmt.Errorf("settlement inputs of %d pending catch-up fences: %w", len(dims), err)
	}
	type latest struct {
		Dimension string
		Version   int64
		State     string
	}
	inputs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[latest])
	if err != nil {
		return 0, nil, fmt.Errorf("settlement inputs of %d pending catch-up fences: %w", len(dims), err)
	}
	if len(inputs) != len(dims) {
		return 0, nil, fmt.Errorf("settlement inputs: %d of %d pending catch-up fences have none", len(dims)-len(inputs), len(dims))
	}
	for _, in := range inputs {
		if in.State == settlement.ReconciliationNotRequired {
			open++ // settleable: the worker has work to do
			continue
		}
		waiting[in.State]++
	}
	return open, waiting, nil
}
