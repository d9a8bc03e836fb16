package cli

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/metering"
	"github.com/oceanway/core/internal/server"
)

// issue 16 (wiring): serve runs the settlement catch-up worker wherever it
// serves the coordinator and reaches the metering database it validates
// against; without either it runs none. (Pools connect lazily: nothing here
// needs a server; the demo command test runs the worker for real.)
func TestServeRunsTheCatchUpWorkerWithTheCoordinator(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(t.Context(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	require.NoError(t, err)
	defer pool.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	w, err := catchUpWorker(pool, nil, nil, nil, nil, log)
	require.NoError(t, err)
	require.Nil(t, w, "no metering database: no worker")
	w, err = catchUpWorker(nil, nil, metering.Reads{DB: pool}, nil, nil, log)
	require.NoError(t, err)
	require.Nil(t, w, "no billing pool: no worker")
	w, err = catchUpWorker(pool, nil, metering.Reads{DB: pool}, nil, nil, log)
	require.NoError(t, err)
	require.NotNil(t, w)

	var out bytes.Buffer
	ctx, cancel := context.WithCancel(t.Context())
	wait, err := startCatchUpWorker(ctx, serveParams{coordinator: true, billingPool: pool,
		consumerPools: server.Pools{boundary.Metering: pool}, log: log, out: &out}, nil, nil)
	require.NoError(t, err)
	cancel()
	wait() // stops with its context
	require.Contains(t, out.String(), "settlement catch-up worker running")

	out.Reset()
	wait, err = startCatchUpWorker(t.Context(), serveParams{coordinator: false, billingPool: pool,
		consumerPools: server.Pools{boundary.Metering: pool}, log: log, out: &out}, nil, nil)
	require.NoError(t, err)
	wait()
	require.Empty(t, out.String(), "not the coordinator's process: no worker")
}
