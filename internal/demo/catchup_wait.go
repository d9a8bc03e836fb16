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
	qOpenDeliveries        = statements.Get("open_deliveries")
)

// catchUpWaits classifies the catch-up fences pending verification: open
// (the worker can still settle the newest input) or waiting visibly for the
// reconciliation chain (not built) because the newest post-finality input
// is not settleable (reconciliation_required or awaiting_evidence: e.g. the
// provider's conflicting report reached Metering after the finalization).
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
	for _, dim := range dims {
		if !ok {
			open++
			continue
		}
		var version int64
		var state string
		if err := m.QueryRow(ctx, qSettlementInputLatest, dim).Scan(&version, &state); err != nil {
			return 0, nil, fmt.Errorf("settlement input of %s: %w", dim, err)
		}
		if state == settlement.ReconciliationNotRequired {
			open++ // settleable: the worker has work to do
			continue
		}
		waiting[state]++
	}
	return open, waiting, nil
}
