package billing

import (
	"embed"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	contract "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbgauge"
)

//go:embed sql/*.sql
var billingSQL embed.FS

var billingStatements = db.MustLoadStatements("billing", billingSQL, "sql")

// Fence states a finalization fence can wait in (fence_state CHECK).
var unfinishedFenceStates = []string{"pending_evaluation", "awaiting_finalization", "reconciliation_required"}

// NewCollector reads Billing's open state from the core database at scrape
// time (OBS-1): unfinished finalization fences by state and visible waiting
// reason with the oldest age, catch-up fences not caught up, and open late
// settlement exposures with their amount and the oldest. The labels are
// states and reason codes from fixed sets, never an id (OBS-2). The
// reconciliation cases and grants have no metric yet: the resolution chain
// does not exist (issue 31).
func NewCollector(pool *pgxpool.Pool, timeout time.Duration) *dbgauge.Collector {
	always := make([][]string, 0, len(unfinishedFenceStates))
	for _, s := range unfinishedFenceStates {
		if s != "awaiting_finalization" { // always has a reason
			always = append(always, []string{s, ""})
		}
	}
	return dbgauge.New(dbgauge.Config{Owner: "billing", Pool: pool, Timeout: timeout, Queries: []dbgauge.Query{
		{SQL: billingStatements.Get("metrics_fences"), Labels: []string{"state", "waiting_reason"}, Always: always,
			Gauges: []dbgauge.Gauge{
				{Name: "oceanway_billing_fences", Help: "Finalization fences not committed, by state and visible waiting reason."},
				{Name: "oceanway_billing_fence_oldest_age_seconds", Help: "Time since the oldest of those fences last moved."},
			}},
		{SQL: billingStatements.Get("metrics_catch_up_fences"), Labels: []string{"state"},
			Always: [][]string{{"pending_verification"}, {"blocked_on_owner_conflict"}},
			Gauges: []dbgauge.Gauge{
				{Name: "oceanway_billing_catch_up_fences", Help: "Settlement catch-up fences not caught up, by state."},
			}},
		{SQL: billingStatements.Get("metrics_exposures"), Gauges: []dbgauge.Gauge{
			{Name: "oceanway_billing_late_exposures_open", Help: "Open late settlement exposures (blocked, never charged automatically)."},
			{Name: "oceanway_billing_late_exposures_open_amount", Help: "Sum of the open late settlement exposures, in the reservation's unit (credits)."},
			{Name: "oceanway_billing_late_exposure_oldest_open_age_seconds", Help: "Age of the oldest open late settlement exposure."},
		}},
	}})
}

// Counters count what this process's Billing workers committed (OBS-1):
// finalization decisions by outcome and settlement transitions by kind,
// each label initialised at zero so the series exist from the start. A nil
// *Counters counts nothing (tests, one-off workers).
type Counters struct {
	decisions, transitions *prometheus.CounterVec
}

// NewCounters creates the counters and registers them on reg.
func NewCounters(reg prometheus.Registerer) *Counters {
	c := &Counters{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oceanway_billing_finalization_decisions_total",
			Help: "Finalization decisions committed (successes) or recorded (blocked, reconciliation_required), by decision.",
		}, []string{"decision"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oceanway_billing_settlement_transitions_total",
			Help: "Settlement transitions committed after finality, by kind.",
		}, []string{"kind"}),
	}
	for _, d := range []string{contract.DecisionSettleAndReleaseRemainder, contract.DecisionReleaseAll,
		contract.DecisionBlocked, contract.DecisionReconciliationRequired} {
		c.decisions.WithLabelValues(d)
	}
	for _, k := range []string{contract.TransitionRefund, contract.TransitionAdjustment, contract.TransitionLateSettlementExposure} {
		c.transitions.WithLabelValues(k)
	}
	reg.MustRegister(c.decisions, c.transitions)
	return c
}

// DecisionCommitted counts one committed or recorded decision.
func (c *Counters) DecisionCommitted(decision string) {
	if c != nil {
		c.decisions.WithLabelValues(decision).Inc()
	}
}

// TransitionCommitted counts one committed settlement transition.
func (c *Counters) TransitionCommitted(kind string) {
	if c != nil {
		c.transitions.WithLabelValues(kind).Inc()
	}
}
