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
	_, err := meteringWorker(pools, 1, 0, wm, log)
	require.NoError(t, err)
	require.NotNil(t, finalizationWorker(b.Core(), pools, pools, 1, wm, nil, log))
	_, err = catchUpWorker(b.Core(), pools, wm, nil, log)
	require.NoError(t, err)

	families, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			require.Len(t, m.GetLabel(), 1, "%s: labelled by queue only", f.GetName())
			require.Equal(t, "queue", m.GetLabel()[0].GetName())
			if got[f.GetName()] == nil {
				got[f.GetName()] = map[string]float64{}
			}
			got[f.GetName()][m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	queues := []string{"metering_eligibility", "metering_provider_cost", "billing_finalization", "billing_settlement_catch_up"}
	for _, q := range queues {
		require.Equal(t, 1.0, got["oceanway_work_backlog_scrape_ok"][q], "backlog of %s read", q)
		require.Contains(t, got["oceanway_work_depth"], q)
		require.Contains(t, got["oceanway_work_oldest_claimable_age_seconds"], q)
	}
}
