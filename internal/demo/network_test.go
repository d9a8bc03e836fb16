package demo

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/server"
)

// setupHTTP is setup with the projector behind the loopback HTTP endpoint.
func setupHTTP(t *testing.T, cfg dispatcher.Config) (*fixture, *Network) {
	t.Helper()
	f := setup(t, cfg, 2)
	core := f.pools[boundary.Core]
	p, err := projector.New(core, projector.Config{})
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	n, err := StartNetwork(map[route.Destination]transport.ConsumerFunc{route.CoreOperations: p.Consume}, reg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, n.Close()) })
	f.rt, err = server.New(f.pools, nil, server.Config{Dispatcher: cfg, DispatchersPerBoundary: 2,
		Remote: n.Client, RemoteDestinations: n.Client.Destinations()}, reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	return f, n
}

// `oceanway demo --transport http`: every delivery crosses a real loopback
// HTTP listener with workload tokens and the same invariants hold.
func TestDemo_HTTPTransportPassesEveryInvariant(t *testing.T) {
	t.Parallel()
	f, n := setupHTTP(t, dispatcher.Config{PollInterval: 20 * time.Millisecond})
	s, err := Run(t.Context(), f.rt, f.pools, f.admit, Config{Runs: 60, AdmitWorkers: 4, Timeout: 2 * time.Minute, Network: n})
	require.NoError(t, err)
	requirePassed(t, s)
	require.Equal(t, TransportHTTP, s.Transport)
	require.EqualValues(t, 120, s.Acknowledged)
	require.InDelta(t, 120, testutil.ToFloat64(n.Metrics.Requests.WithLabelValues("core_operations", "acknowledged")), 0)
}

// OB-DELIVER-6 under chaos over HTTP: answers dropped after the consumer
// committed, kills and a pause past the lease still lose and duplicate nothing.
func TestDemo_HTTPChaosDropsAnswersAndConverges(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos demo skipped with -short")
	}
	t.Parallel()
	f, n := setupHTTP(t, dispatcher.Config{LeaseDuration: 400 * time.Millisecond, PollInterval: 20 * time.Millisecond,
		BackoffBase: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond})
	s, err := Run(t.Context(), f.rt, f.pools, f.admit, Config{Runs: 120, AdmitWorkers: 4, Chaos: true, Timeout: 2 * time.Minute, Network: n})
	require.NoError(t, err)
	requirePassed(t, s)
	require.Positive(t, s.DroppedResponses, "answers were dropped after commit")
}
