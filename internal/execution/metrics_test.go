package execution_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/execution"
)

// executionSeries scrapes Execution's collector into name → value.
func executionSeries(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			require.Empty(t, m.GetLabel(), "OBS-2: Execution's gauges carry no label, never a run id")
			out[mf.GetName()] = m.GetGauge().GetValue()
		}
	}
	return out
}

// OBS-1 (issue 36): a run still accepting attempts counts in
// oceanway_execution_runs_accepting_attempts (with the oldest one's age)
// and no longer once its closure is committed; with none open both gauges
// are 0 and the series exist.
func TestCollectorCountsRunsAcceptingAttempts(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	c := execution.NewCollector(e.exec, 5*time.Second)
	none := map[string]float64{"oceanway_execution_runs_accepting_attempts": 0,
		"oceanway_execution_oldest_accepting_run_age_seconds": 0, "oceanway_execution_scrape_ok": 1}
	require.Equal(t, none, executionSeries(t, c))

	first := e.open(t)
	withAttempt := e.open(t)
	e.attemptWithEligibility(t, withAttempt.RunID, "0b000000-0000-4000-8000-000000000036")
	got := executionSeries(t, c)
	require.Equal(t, 2.0, got["oceanway_execution_runs_accepting_attempts"])
	age := got["oceanway_execution_oldest_accepting_run_age_seconds"]
	require.Greater(t, age, 0.0)
	require.Less(t, age, 60.0)

	_, err := e.svc.CloseRun(ctx, first.RunID)
	require.NoError(t, err)
	require.Equal(t, 1.0, executionSeries(t, c)["oceanway_execution_runs_accepting_attempts"])
	_, err = e.svc.CloseRun(ctx, withAttempt.RunID)
	require.NoError(t, err)
	require.Equal(t, none, executionSeries(t, c), "closed runs do not count")
}

// OBS-1 (issue 36): the statement reads the partial index of migration
// 00008, off the history of closed runs.
func TestMetricsStatementUsesPartialIndex(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dbtest.RequireStatementUsesIndex(t, e.exec, "sql/metrics_runs.sql", "run_execution_states_accepting")
}
