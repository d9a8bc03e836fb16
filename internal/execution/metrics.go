package execution

import (
	"embed"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbgauge"
)

//go:embed sql/*.sql
var metricsSQL embed.FS

var metricsStatements = db.MustLoadStatements("execution", metricsSQL, "sql")

// NewCollector reads Execution's open state from its database at scrape
// time (OBS-1): the runs still accepting attempts and the oldest one's age.
func NewCollector(pool *pgxpool.Pool, timeout time.Duration) *dbgauge.Collector {
	return dbgauge.New(dbgauge.Config{Owner: "execution", Pool: pool, Timeout: timeout, Queries: []dbgauge.Query{
		{SQL: metricsStatements.Get("metrics_runs"), Gauges: []dbgauge.Gauge{
			{Name: "oceanway_execution_runs_accepting_attempts", Help: "Runs whose attempt set is still open (not closed)."},
			{Name: "oceanway_execution_oldest_accepting_run_age_seconds", Help: "Age of the oldest run still accepting attempts."},
		}},
	}})
}
