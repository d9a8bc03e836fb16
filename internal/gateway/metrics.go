package gateway

import (
	"embed"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbgauge"
)

//go:embed sql/*.sql
var metricsSQL embed.FS

var metricsStatements = db.MustLoadStatements("gateway", metricsSQL, "sql")

// NewCollector reads the Gateway's open state from its database at scrape
// time (OBS-1): dispatch slots reserved and not yet bound or rejected, and
// the oldest one's age.
func NewCollector(pool *pgxpool.Pool, timeout time.Duration) *dbgauge.Collector {
	return dbgauge.New(dbgauge.Config{Owner: "gateway", Pool: pool, Timeout: timeout, Queries: []dbgauge.Query{
		{SQL: metricsStatements.Get("metrics_slots"), Gauges: []dbgauge.Gauge{
			{Name: "oceanway_gateway_dispatch_slots_reserved", Help: "Dispatch slots reserved and neither bound nor rejected yet."},
			{Name: "oceanway_gateway_oldest_reserved_slot_age_seconds", Help: "Age of the oldest reserved dispatch slot."},
		}},
	}})
}
