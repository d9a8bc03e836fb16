package metering

import (
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oceanway/core/internal/dbgauge"
)

// NewCollector reads Metering's open state from its database at scrape
// time (OBS-1): active Work with a visible Blocked fact by lane, current
// settlement inputs awaiting evidence or needing reconciliation, and
// provider cost lanes not processed, by state. Labels are lanes and states
// from fixed sets, never an id (OBS-2).
func NewCollector(pool *pgxpool.Pool, timeout time.Duration) *dbgauge.Collector {
	return dbgauge.New(dbgauge.Config{Owner: "metering", Pool: pool, Timeout: timeout, Queries: []dbgauge.Query{
		{SQL: statements.Get("metrics_blocked_work"), Labels: []string{"lane"},
			Always: [][]string{{"eligibility_and_settlement_input"}, {"provider_cost"}},
			Gauges: []dbgauge.Gauge{{Name: "oceanway_metering_blocked_work",
				Help: "Active Work whose attempts recorded a visible Blocked fact (it backs off and retries), by lane."}}},
		{SQL: statements.Get("metrics_settlement_inputs"), Gauges: []dbgauge.Gauge{
			{Name: "oceanway_metering_settlement_inputs_awaiting_evidence",
				Help: "Current settlement inputs waiting for provider evidence (Billing cannot settle them yet)."},
			{Name: "oceanway_metering_settlement_inputs_reconciliation_required",
				Help: "Current settlement inputs whose evidence conflicts (Billing waits for reconciliation)."},
		}},
		{SQL: statements.Get("metrics_cost_lanes"), Labels: []string{"state"},
			Always: [][]string{{"waiting_for_evidence"}, {"reconciliation_required"}, {"blocked_on_processing_conflict"}},
			Gauges: []dbgauge.Gauge{{Name: "oceanway_metering_cost_lanes",
				Help: "Provider cost lanes whose cost is not processed, by state."}}},
	}})
}
