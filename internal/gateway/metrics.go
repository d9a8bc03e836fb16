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
// time (OBS-1): provider evidence chains whose Current availability is not
// `available` — pending, not reported, unavailable or conflicting — by
// evidence kind and state, and the oldest one's age. (A dispatch slot is
// never left reserved at commit, GW009, so slots have no gauge.)
func NewCollector(pool *pgxpool.Pool, timeout time.Duration) *dbgauge.Collector {
	var always [][]string
	for _, kind := range []string{"provider_usage", "provider_cost"} {
		for _, state := range []string{"pending", "not_reported", "unavailable", "conflicting"} {
			always = append(always, []string{kind, state})
		}
	}
	return dbgauge.New(dbgauge.Config{Owner: "gateway", Pool: pool, Timeout: timeout, Queries: []dbgauge.Query{
		{SQL: metricsStatements.Get("metrics_availability"), Labels: []string{"evidence_kind", "state"}, Always: always,
			Gauges: []dbgauge.Gauge{
				{Name: "oceanway_gateway_availability_not_available",
					Help: "Provider evidence chains whose Current availability is not available, by evidence kind and state."},
				{Name: "oceanway_gateway_availability_oldest_not_available_age_seconds",
					Help: "Age of the oldest such Current availability snapshot."},
			}},
	}})
}
