package cli_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/envelope/sample"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/cli"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/outbox/outboxtest"
	"github.com/oceanway/core/internal/release"
)

// RET-1 from the command line: archive moves the closed history of the core
// database to an archive directory, verify passes and fails on a changed
// byte (non-zero exit naming the file), archive refuses to start without a
// scratch database for its restore drill and records the drill of every run,
// drill re-drills and records, restore reproduces the archive in a
// scratch database and refuses the source database.
func TestRetentionCommand_RET1_ArchiveVerifyRestore(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core, boundary.Execution}, MaxConns: 8})
	pool := b.Core()
	_, err := release.Bootstrap(ctx, pool, release.BootstrapParams{
		ProjectionName: "operations_read_model", ProjectionVersion: 1, ReadinessProofRef: "test", SourceRelease: "test"})
	require.NoError(t, err)
	events := make([]envelope.Envelope, 3)
	for i := range events {
		events[i] = sample.Envelope("run.created@2.0", 0)
		events[i].EventID = outbox.NewEventID()
		events[i].AggregateID = uuid.NewString()
		events[i].Payload["runId"] = events[i].AggregateID
	}
	_, err = db.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (outbox.AppendResult, error) {
		return release.AppendTx(ctx, tx, events...)
	})
	require.NoError(t, err)
	consumer := outboxtest.NewConsumer(t, b.Execution())
	d, err := dispatcher.New(pool, consumer.Transport(), dispatcher.Config{
		Destinations: []route.Destination{route.CoreOperations}, PollInterval: 5 * time.Millisecond,
	}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM outbox.outbox_events WHERE published_at IS NOT NULL`).Scan(&n))
		return n == 3
	}, 30*time.Second, 10*time.Millisecond)
	stop()
	require.NoError(t, <-done)

	run := func(dsn string, args ...string) mainResult {
		t.Helper()
		args = append([]string{"retention"}, args...)
		if dsn != "" {
			args = append(args, "--core-dsn", dsn)
		}
		var stdout, stderr bytes.Buffer
		code := cli.Main(args, strings.NewReader(""), &stdout, &stderr)
		return mainResult{code: code, stdout: stdout.String(), stderr: stderr.String()}
	}
	dir := filepath.Join(t.TempDir(), "archive")
	scratch := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}})
	// no scratch database for the restore drill: nothing starts
	r := run(b.DSNs[boundary.Core], "archive", "--older-than", "1ms", "--archive-dir", dir)
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "--drill-dsn")
	r = run(b.DSNs[boundary.Core], "archive", "--older-than", "1ms", "--archive-dir", dir, "--drill-dsn", scratch.DSNs[boundary.Core])
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "1 run(s)")
	var drills int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM outbox.retention_recovery_drills d
		JOIN outbox.retention_runs r USING (manifest_sha256)`).Scan(&drills))
	require.Equal(t, 1, drills, "the run's drill is in the recovery baseline")
	var hot int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM outbox.outbox_events`).Scan(&hot))
	require.Zero(t, hot)

	r = run("", "verify", "--archive-dir", dir)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "3 events, 3 deliveries, 3 attempt starts, 3 attempt finishes")

	// a periodic re-drill records one more drill; the scratch stays empty
	r = run(b.DSNs[boundary.Core], "drill", "--archive-dir", dir, "--drill-dsn", scratch.DSNs[boundary.Core])
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "recorded 1 drill(s)")

	r = run(scratch.DSNs[boundary.Core], "restore", "--archive-dir", dir)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "reproduce every archived digest")
	r = run(b.DSNs[boundary.Core], "restore", "--archive-dir", dir)
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "not a scratch database")

	manifests, err := filepath.Glob(filepath.Join(dir, "manifests", "*.json"))
	require.NoError(t, err)
	require.Len(t, manifests, 1)
	raw, err := os.ReadFile(manifests[0])
	require.NoError(t, err)
	raw[len(raw)/2] ^= 0x01
	require.NoError(t, os.Chmod(manifests[0], 0o600))
	require.NoError(t, os.WriteFile(manifests[0], raw, 0o600))
	r = run("", "verify", "--archive-dir", dir)
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "archive verification failed")
	require.Contains(t, r.stderr, filepath.Base(manifests[0]))

	r = run("", "verify")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "--archive-dir is required")
}
