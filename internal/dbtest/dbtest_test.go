package dbtest

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/lines"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
)

func databaseExists(t *testing.T, name string) bool {
	t.Helper()
	h, err := harness(t.Context())
	require.NoError(t, err)
	var ok bool
	require.NoError(t, h.adminPool.QueryRow(t.Context(),
		"SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_database WHERE datname = $1)", name).Scan(&ok))
	return ok
}

func TestNewCreatesMigratedBoundaryDatabases(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := New(t)
	require.Len(t, b.Pools, 4)
	for _, bd := range boundary.All {
		pool := b.Pool(bd)
		var name string
		require.NoError(t, pool.QueryRow(ctx, "SELECT current_database()").Scan(&name))
		require.Equal(t, b.Prefix+"_"+string(bd), name)
		var tables int
		require.NoError(t, pool.QueryRow(ctx,
			"SELECT count(*) FROM information_schema.tables WHERE table_schema = 'outbox' AND table_type = 'BASE TABLE'").Scan(&tables))
		require.Equal(t, 19, tables, "outbox line applied to %s (10 + pair_producers, database_producer + bootstrap_definitions, legacy_adoptions, legacy_quarantine + retention_runs, archived_events, archived_deliveries + retention_recovery_drills)", bd)
	}
	// Unqualified names fail loudly (search_path = pg_catalog).
	_, err := b.Core().Exec(ctx, "SELECT * FROM outbox_events")
	require.Error(t, err)
}

// The lines a test names decide what its databases hold: without lines only
// the outbox schema, with lines.All() the core domain schemas too (from
// another template).
func TestLinesChooseTheSchemas(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schemas := func(b *Bundle) []string {
		rows, err := b.Core().Query(ctx, "SELECT nspname::text FROM pg_catalog.pg_namespace WHERE nspname IN ('outbox', 'admission', 'operations') ORDER BY 1")
		require.NoError(t, err)
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return names
	}
	outboxOnly := New(t, Opts{Boundaries: []boundary.Boundary{boundary.Core}})
	all := New(t, Opts{Boundaries: []boundary.Boundary{boundary.Core, boundary.Gateway}, Lines: lines.All()})
	require.Equal(t, []string{"outbox"}, schemas(outboxOnly))
	require.Equal(t, []string{"admission", "operations", "outbox"}, schemas(all))
	var n int
	require.NoError(t, all.Gateway().QueryRow(ctx, "SELECT count(*) FROM pg_catalog.pg_namespace WHERE nspname IN ('admission', 'operations')").Scan(&n))
	require.Zero(t, n, "core lines stay out of the gateway database")
}

func TestBundlesAreIsolated(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a := New(t, Opts{Boundaries: []boundary.Boundary{boundary.Core}})
	b := New(t, Opts{Boundaries: []boundary.Boundary{boundary.Core}})
	require.NotEqual(t, a.Prefix, b.Prefix)
	_, err := a.Core().Exec(ctx, "INSERT INTO outbox.projection_versions (projection_name, projection_version) VALUES ('p', 1)")
	require.NoError(t, err)
	var n int
	require.NoError(t, b.Core().QueryRow(ctx, "SELECT count(*) FROM outbox.projection_versions").Scan(&n))
	require.Zero(t, n)
	require.Panics(t, func() { a.Gateway() })
}

func TestCleanupDropsDatabases(t *testing.T) {
	t.Parallel()
	b, err := NewBundle(t.Context(), Opts{Boundaries: []boundary.Boundary{boundary.Metering}})
	require.NoError(t, err)
	name := b.Prefix + "_metering"
	require.True(t, databaseExists(t, name))
	b.Cleanup()
	b.Cleanup()
	require.False(t, databaseExists(t, name))
}

func TestSweepDropsLeftoversOfDeadRunsOnly(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	h, err := harness(ctx)
	require.NoError(t, err)

	// A run that is "alive": another session holds its run lock.
	live, err := pgx.Connect(ctx, h.srv.URL)
	require.NoError(t, err)
	defer func() { _ = live.Close(ctx) }() // Terminate only: the server ends the session either way
	liveRun := (h.runID + 1) & 0x7fffffff
	deadRun := (h.runID + 2) & 0x7fffffff
	_, err = live.Exec(ctx, "SELECT pg_advisory_lock($1::int4, $2::int4)", lockClassRun, int32(liveRun))
	require.NoError(t, err)

	liveDB := fmt.Sprintf("owt_%08x_1_core", liveRun)
	deadDB := fmt.Sprintf("owt_%08x_1_core", deadRun)
	for _, n := range []string{liveDB, deadDB} {
		_, err := h.adminPool.Exec(ctx, "CREATE DATABASE "+n)
		require.NoError(t, err)
	}
	t.Cleanup(func() { h.dropDatabase(context.Background(), liveDB) }) // t.Context() is cancelled before cleanups run

	h.lockMu.Lock()
	err = h.sweep(ctx)
	h.lockMu.Unlock()
	require.NoError(t, err)
	require.False(t, databaseExists(t, deadDB), "leftover of a dead run is dropped")
	require.True(t, databaseExists(t, liveDB), "databases of a running binary are kept")
}

// The guard mutation check (scripts/guards) hands a changed migration in
// through MigrationsOverlayEnv: the test databases apply the overlaid file
// in place of the embedded one, from a template of their own.
func TestMigrationsOverlayReplacesAnEmbeddedFile(t *testing.T) {
	ctx := t.Context()
	name := "00001_outbox_tables.sql"
	orig, err := fs.ReadFile(outboxschema.Line().FS, name)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, outboxschema.LineName), 0o755))
	overlaid := string(orig) + "\nCOMMENT ON SCHEMA outbox IS 'overlaid';\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, outboxschema.LineName, name), []byte(overlaid), 0o644))
	t.Setenv(MigrationsOverlayEnv, dir)
	b := New(t, Opts{Boundaries: []boundary.Boundary{boundary.Core}})
	var comment *string
	require.NoError(t, b.Core().QueryRow(ctx, "SELECT obj_description('outbox'::regnamespace, 'pg_namespace')").Scan(&comment))
	require.NotNil(t, comment)
	require.Equal(t, "overlaid", *comment)
}
