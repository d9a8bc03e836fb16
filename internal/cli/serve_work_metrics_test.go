package cli

import (
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/lines"
	"github.com/oceanway/core/internal/metering"
	"github.com/oceanway/core/internal/server"
	"github.com/oceanway/core/internal/work"
)

// issue 29, OBS-1: the workers serve builds report on one work.Metrics: every
// queue of Work (both metering lanes, finalization, catch-up) has its
// backlog read at scrape time from its own database, labelled by its queue
// name only (OBS-2).
func TestServeWorkersExposeWorkMetricsPerQueue(t *testing.T) {
	t.Parallel()
	b := dbtest.New(t, dbtest.Opts{Lines: lines.All()})
	pools := server.Pools{}
	for _, bd := range boundary.All {
		pools[bd] = b.Pool(bd)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := prometheus.NewRegistry()
	wm := work.NewMetrics(reg)
	_, err := meteringWorker(b.Metering(), inProcessReaders(pools), 1, 0, wm, log)
	require.NoError(t, err)
	require.NotNil(t, finalizationWorker(b.Core(), nil, inProcessReaders(pools), 1, wm, nil, log))
	_, err = catchUpWorker(b.Core(), nil, metering.Reads{DB: b.Metering()}, wm, nil, log)
	require.NoError(t, err)

	families, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]map[string]float64{}
	outcomes := map[string][]string{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			require.Contains(t, labels, "queue", f.GetName())
			for name := range labels {
				require.Contains(t, []string{"queue", "result", "outcome"}, name,
					"%s: labelled by queue and a fixed result or outcome name only", f.GetName())
			}
			if got[f.GetName()] == nil {
				got[f.GetName()] = map[string]float64{}
			}
			if len(labels) == 1 {
				got[f.GetName()][labels["queue"]] = m.GetGauge().GetValue()
			}
			if f.GetName() == "oceanway_work_finishes_total" {
				outcomes[labels["queue"]] = append(outcomes[labels["queue"]], labels["outcome"])
			}
		}
	}
	// issue 36: each queue's fixed outcomes exist at 0 before the first finish.
	require.ElementsMatch(t, []string{"settle_and_release_remainder", "release_all"}, outcomes["billing_finalization"])
	require.ElementsMatch(t, []string{"caught_up", "transition_applied", "already_evaluated"}, outcomes["billing_settlement_catch_up"])
	require.ElementsMatch(t, []string{"applied", "superseded"}, outcomes["metering_eligibility"])
	queues := []string{"metering_eligibility", "metering_provider_cost", "billing_finalization", "billing_settlement_catch_up"}
	for _, q := range queues {
		require.Equal(t, 1.0, got["oceanway_work_backlog_scrape_ok"][q], "backlog of %s read", q)
		require.Contains(t, got["oceanway_work_depth"], q)
		require.Contains(t, got["oceanway_work_oldest_claimable_age_seconds"], q)
	}
}
