package pgserver_test

import (
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/pgserver"
)

func TestStartThrowawayCluster(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	srv, err := pgserver.Start(ctx)
	if err != nil && os.Getenv(pgserver.EnvForceEmbedded) != "1" {
		if _, binErr := pgserver.BinDir(); binErr != nil {
			t.Skipf("no PostgreSQL binaries: %v", binErr)
		}
	}
	require.NoError(t, err)
	require.Equal(t, pgserver.SourceEmbedded, srv.Source)

	conn, err := pgx.Connect(ctx, srv.DatabaseURL("postgres"))
	require.NoError(t, err)
	var one int
	require.NoError(t, conn.QueryRow(ctx, "SELECT 1").Scan(&one))
	require.Equal(t, 1, one)
	require.NoError(t, conn.Close(ctx))

	require.NoError(t, srv.Stop())
	require.NoError(t, srv.Stop(), "Stop is idempotent")
	_, err = pgx.Connect(ctx, srv.URL+"&connect_timeout=2")
	require.Error(t, err, "the cluster is gone after Stop")
}

func TestFindHonorsDatabaseURL(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	base, err := pgserver.Find(ctx, pgserver.Opts{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = base.Stop() })

	srv, err := pgserver.Find(ctx, pgserver.Opts{DatabaseURL: base.URL})
	require.NoError(t, err)
	require.Equal(t, pgserver.SourceDatabaseURL, srv.Source)
	require.Equal(t, base.URL, srv.URL)
	require.NoError(t, srv.Stop(), "Stop of a server not started here is a no-op")
}

func TestWithDatabase(t *testing.T) {
	t.Parallel()
	require.Equal(t, "postgres://u@h:1/other?sslmode=disable", pgserver.WithDatabase("postgres://u@h:1/postgres?sslmode=disable", "other"))
	require.Equal(t, "host=h dbname='x'", pgserver.WithDatabase("host=h", "x"))
}
