package retention

import (
	"context"
	"embed"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/internal/db"
)

//go:embed sql/*.sql
var statementFiles embed.FS

var statements = db.MustLoadStatements("retention", statementFiles, "sql")

var (
	sqlPlan              = statements.Get("plan")
	sqlCutoff            = statements.Get("cutoff")
	sqlDBNow             = statements.Get("db_now")
	sqlBatch             = statements.Get("batch")
	sqlSegment           = statements.Get("segment")
	sqlDefinitions       = statements.Get("definitions")
	sqlArchiveRun        = statements.Get("archive_run")
	sqlRestoreTarget     = statements.Get("restore_target")
	sqlRestoreDefinition = statements.Get("restore_definition")
	sqlRestoreSegment    = statements.Get("restore_segment")
	sqlRestoreCheck      = statements.Get("restore_check")
	sqlRestoreAnalyze    = statements.Get("restore_analyze")
	sqlSessionUTC        = statements.Get("session_utc")
	sqlTriggersOff       = statements.Get("triggers_off")
	sqlTriggersOn        = statements.Get("triggers_on")
	sqlCurrentDatabase   = statements.Get("current_database")
	sqlArchiveLock       = statements.Get("archive_lock")
	sqlArchiveUnlock     = statements.Get("archive_unlock")
	sqlManifestUnrecord  = statements.Get("manifest_unrecorded")
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
