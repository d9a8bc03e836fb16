package inbox_test

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/outbox/transport"
)

// applyCounts reads the histogram's sample count per result of one consumer.
func applyCounts(t *testing.T, reg *prometheus.Registry, consumer string) map[string]uint64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]uint64{}
	for _, f := range families {
		if f.GetName() != "oceanway_consumer_apply_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			require.Len(t, labels, 2, "OBS-2: consumer and result only")
			if labels["consumer"] == consumer {
				out[labels["result"]] = m.GetHistogram().GetSampleCount()
			}
		}
	}
	return out
}

// issue 36, OBS-1: consumer apply latency is measured where the consumer
// runs, classified by the answer it gave: applied, a recoverable wait, a
// retryable failure or a refusal for good; a batch's deliveries each get a
// sample. Every result series exists at 0 before the first delivery.
func TestApplyMetricsClassifyEveryAnswer(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := inbox.NewApplyMetrics(reg)
	errs := []error{nil, transport.Wait("revision_gap", errors.New("gap")),
		transport.Retryable("owner_unavailable", errors.New("down")), transport.NonRetryable("digest_conflict", errors.New("bad")),
		errors.New("unclassified failure")}
	i := 0
	one := m.Consumer(route.MeteringInputProcessor, func(context.Context, transport.Delivery) (transport.Result, error) {
		err := errs[i]
		i++
		return transport.Result{}, err
	})
	require.Equal(t, map[string]uint64{"applied": 0, "wait": 0, "retryable": 0, "non_retryable": 0},
		applyCounts(t, reg, string(route.MeteringInputProcessor)), "series exist before the first call")
	for range errs {
		_, _ = one(t.Context(), transport.Delivery{})
	}
	require.Equal(t, map[string]uint64{"applied": 1, "wait": 1, "retryable": 2, "non_retryable": 1},
		applyCounts(t, reg, string(route.MeteringInputProcessor)), "an unclassified failure is retryable, never a refusal")

	batch := m.Batch(route.CoreOperations, func(_ context.Context, ds []transport.Delivery) []transport.Answer {
		out := make([]transport.Answer, len(ds))
		out[2].Err = transport.Wait("revision_gap", errors.New("gap"))
		return out
	})
	require.Len(t, batch(t.Context(), make([]transport.Delivery, 3)), 3)
	require.Equal(t, map[string]uint64{"applied": 2, "wait": 1, "retryable": 0, "non_retryable": 0},
		applyCounts(t, reg, string(route.CoreOperations)))
}
