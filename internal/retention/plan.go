package retention

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/internal/db"
)

// Event classes of a plan. Only ClassClosed may ever leave.
const (
	ClassClosed         = "closed"
	ClassUnpublished    = "unpublished"
	ClassQuarantined    = "quarantined"
	ClassOpenDelivery   = "open_delivery"
	ClassLegacyAdoption = "legacy_adoption_record"
)

// Plan is what an archive run with the same cutoff would take, computed in
// one statement (one snapshot).
type Plan struct {
	OlderThan string    `json:"olderThan"`
	Cutoff    time.Time `json:"cutoff"`
	// Classes counts every event created before the cutoff by class.
	Classes map[string]int64 `json:"classes"`
	// Leaving is what the closed events would take with them.
	Leaving Leaving `json:"leaving"`
}

// Leaving counts the closed events and their history rows.
type Leaving struct {
	Events          int64 `json:"events" db:"events"`
	Deliveries      int64 `json:"deliveries" db:"deliveries"`
	AttemptStarts   int64 `json:"attemptStarts" db:"attempt_starts"`
	AttemptFinishes int64 `json:"attemptFinishes" db:"attempt_finishes"`
}

type planRow struct {
	Cutoff  time.Time        `db:"cutoff"`
	Classes map[string]int64 `db:"classes"`
	Leaving
}

// PlanFor computes the plan for events created more than olderThan ago.
func PlanFor(ctx context.Context, q db.Executor, olderThan time.Duration) (*Plan, error) {
	if olderThan <= 0 {
		return nil, ErrInvalidOlderThan
	}
	rows, err := q.Query(ctx, sqlPlan, pgx.NamedArgs{"older_than_seconds": olderThan.Seconds()})
	if err != nil {
		return nil, fmt.Errorf("plan retention: %w", err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[planRow])
	if err != nil {
		return nil, fmt.Errorf("plan retention: %w", err)
	}
	for _, c := range []string{ClassClosed, ClassUnpublished, ClassQuarantined, ClassOpenDelivery, ClassLegacyAdoption} {
		if _, ok := r.Classes[c]; !ok {
			r.Classes[c] = 0
		}
	}
	return &Plan{OlderThan: olderThan.String(), Cutoff: r.Cutoff.UTC(), Classes: r.Classes, Leaving: r.Leaving}, nil
}
