package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/admission"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/lines"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/release"
	"github.com/oceanway/core/internal/server"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

// The serving runtime delivers an admission's events through the in-process
// projector, exposes health, readiness and low-cardinality metrics (OBS-1,
// OBS-2), and a stop drains and returns cleanly (OB-CLAIM-5).
func TestRuntime_ServesDeliversAndStopsCleanly(t *testing.T) {
	t.Parallel()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core, boundary.Metering}, Lines: lines.All(), MaxConns: 8})
	ctx := t.Context()
	for _, pool := range []server.Pools{{boundary.Core: b.Core()}, {boundary.Metering: b.Metering()}} {
		for _, p := range pool {
			_, err := release.Bootstrap(ctx, p, release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1})
			require.NoError(t, err)
		}
	}
	pools := server.Pools{boundary.Core: b.Core(), boundary.Metering: b.Metering()}
	proj, err := projector.New(b.Core(), projector.Config{})
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	rt, err := server.New(pools, map[route.Destination]transport.ConsumerFunc{route.CoreOperations: proj.Consume},
		server.Config{Dispatcher: dispatcher.Config{PollInterval: 20 * time.Millisecond}, DispatchersPerBoundary: 2},
		reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	require.Equal(t, []route.Destination{route.CoreOperations}, rt.Served())

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rt.Run(runCtx) }()

	res, err := admission.New(b.Core()).Admit(ctx, admission.Request{AdmissionOperationID: uuid.NewString(), TenantKind: "organization",
		TenantID: uuid.NewString(), WorkspaceID: uuid.NewString(), BillingAccountID: uuid.NewString(), ReservedCredits: 500})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var published int
		require.NoError(c, b.Core().QueryRow(ctx, `SELECT count(*) FROM outbox.outbox_events WHERE published_at IS NOT NULL AND event_id = ANY($1::uuid[])`,
			[]string{res.RunCreatedEventID, res.WalletReservedEventID}).Scan(&published))
		require.Equal(c, 2, published)
	}, 30*time.Second, 10*time.Millisecond, "admission events not published in time")

	h := server.Handler(server.HTTPConfig{Registry: reg, Pools: pools})
	code, body := get(t, h, "/healthz")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "ok")
	code, _ = get(t, h, "/readyz")
	require.Equal(t, http.StatusOK, code)
	code, body = get(t, h, "/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `oceanway_outbox_acknowledged_total{boundary="core",destination="core_operations"} 2`)
	require.Contains(t, body, `oceanway_outbox_open_deliveries_scrape_ok{boundary="metering"} 1`)
	require.NotContains(t, body, res.RunID, "OBS-2: no id in any label")
	require.NotContains(t, body, res.RunCreatedEventID)
	code, _ = get(t, h, "/admin/")
	require.Equal(t, http.StatusNotFound, code, "no admin handler configured")

	stop()
	require.NoError(t, <-done)
	var open int
	require.NoError(t, b.Core().QueryRow(ctx, `SELECT count(*) FROM outbox.outbox_deliveries WHERE status = 'leased'`).Scan(&open))
	require.Zero(t, open, "nothing stays leased after a graceful stop")

	// Readiness fails when a boundary database is gone.
	b.Metering().Close()
	code, body = get(t, h, "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.True(t, strings.Contains(body, "metering"))
}

// syncBuffer is a bytes.Buffer safe for a logger and a test reading it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// duplicateKeys returns the top-level keys of one JSON object that occur
// more than once (encoding/json into a map would hide them).
func duplicateKeys(t *testing.T, line string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	tok, err := dec.Token()
	require.NoError(t, err)
	require.Equal(t, json.Delim('{'), tok)
	seen := map[string]int{}
	var dups []string
	for dec.More() {
		key, err := dec.Token()
		require.NoError(t, err)
		seen[key.(string)]++
		if seen[key.(string)] == 2 {
			dups = append(dups, key.(string))
		}
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip))
	}
	return dups
}

// OBS-3 (issue 18, item 6): a dispatcher started by the runtime logs each
// attribute once — boundary included — on its JSON lines.
func TestRuntime_DispatcherLogLinesCarryEachAttributeOnce(t *testing.T) {
	t.Parallel()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}, Lines: lines.All(), MaxConns: 4})
	ctx := t.Context()
	_, err := release.Bootstrap(ctx, b.Core(), release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1})
	require.NoError(t, err)
	var logs syncBuffer
	failing := transport.NewInProcess(map[route.Destination]transport.ConsumerFunc{
		route.CoreOperations: func(context.Context, transport.Delivery) (transport.Result, error) {
			return transport.Result{}, errors.New("unclassified") // logged as a warning with its attributes
		},
	})
	rt, err := server.New(server.Pools{boundary.Core: b.Core()}, map[route.Destination]transport.ConsumerFunc{route.CoreOperations: nil},
		server.Config{Dispatcher: dispatcher.Config{PollInterval: 20 * time.Millisecond, BackoffBase: time.Hour, BackoffMax: time.Hour}},
		prometheus.NewRegistry(), slog.New(slog.NewJSONHandler(&logs, nil)))
	require.NoError(t, err)
	d, err := rt.NewDispatcher(boundary.Core, 0, failing)
	require.NoError(t, err)
	_, err = admission.New(b.Core()).Admit(ctx, admission.Request{AdmissionOperationID: uuid.NewString(), TenantKind: "organization",
		TenantID: uuid.NewString(), WorkspaceID: uuid.NewString(), BillingAccountID: uuid.NewString(), ReservedCredits: 500})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "unclassified delivery error") },
		30*time.Second, 10*time.Millisecond)
	stop()
	require.NoError(t, <-done, "a cancelled context is a clean stop")
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	for _, line := range lines {
		require.Empty(t, duplicateKeys(t, line), "log line repeats attributes: %s", line)
	}
	require.Contains(t, lines[0], `"boundary":"core"`)
}

// Issue 17: a runtime with a batch entry point for core_operations hands the
// projector a claim's deliveries in chunks (one consumer transaction per
// chunk, the dispatcher's consumer-call histogram shows calls of several),
// and every event is acknowledged and applied once (CON-1, OB-DELIVER-6).
func TestRuntime_BatchesReachTheProjector(t *testing.T) {
	t.Parallel()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}, Lines: lines.All(), MaxConns: 8})
	ctx := t.Context()
	_, err := release.Bootstrap(ctx, b.Core(), release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1})
	require.NoError(t, err)
	// The admissions are appended before the dispatchers start, so one
	// claim holds them all.
	const admissions = 10
	var events []string
	for range admissions {
		res, err := admission.New(b.Core()).Admit(ctx, admission.Request{AdmissionOperationID: uuid.NewString(), TenantKind: "organization",
			TenantID: uuid.NewString(), WorkspaceID: uuid.NewString(), BillingAccountID: uuid.NewString(), ReservedCredits: 500})
		require.NoError(t, err)
		events = append(events, res.RunCreatedEventID, res.WalletReservedEventID)
	}
	proj, err := projector.New(b.Core(), projector.Config{})
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	rt, err := server.New(server.Pools{boundary.Core: b.Core()}, map[route.Destination]transport.ConsumerFunc{route.CoreOperations: proj.Consume},
		server.Config{Dispatcher: dispatcher.Config{PollInterval: 20 * time.Millisecond}, DispatchersPerBoundary: 1,
			Batches: map[route.Destination]server.Batch{route.CoreOperations: {Limit: 16, Apply: proj.ConsumeBatch}}},
		reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	batcher, ok := rt.Transport().(transport.Batcher)
	require.True(t, ok)
	require.Equal(t, 16, batcher.BatchLimit(route.CoreOperations))
	require.Equal(t, 1, batcher.BatchLimit(route.MeteringInputProcessor))

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rt.Run(runCtx) }()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var published int
		require.NoError(c, b.Core().QueryRow(ctx, `SELECT count(*) FROM outbox.outbox_events WHERE published_at IS NOT NULL AND event_id = ANY($1::uuid[])`,
			events).Scan(&published))
		require.Equal(c, len(events), published)
	}, 30*time.Second, 10*time.Millisecond, "admission events not published in time")
	stop()
	require.NoError(t, <-done)

	var calls, deliveries uint64
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "oceanway_outbox_consumer_call_deliveries" {
			continue
		}
		for _, m := range f.GetMetric() {
			calls += m.GetHistogram().GetSampleCount()
			deliveries += uint64(m.GetHistogram().GetSampleSum())
		}
	}
	require.EqualValues(t, len(events), deliveries, "every delivery went through one consumer call")
	require.Less(t, calls, deliveries, "some consumer call carried several deliveries")
	var receipts int
	require.NoError(t, b.Core().QueryRow(ctx, `SELECT count(*) FROM operations.applied_receipts WHERE event_id = ANY($1::uuid[])`, events).Scan(&receipts))
	require.Equal(t, len(events), receipts)
}
