package migrate_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/outbox/schema"
)

func line(name string, after ...string) migrate.Line {
	return migrate.Line{
		Name: name, Boundaries: []boundary.Boundary{boundary.Core}, After: after,
		FS: fstest.MapFS{"00001_x.sql": {Data: []byte("-- +goose Up\nSELECT 1;\n")}},
	}
}

func names(ls []migrate.Line) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Name)
	}
	return out
}

func TestOrderedSortsLinesByDependency(t *testing.T) {
	t.Parallel()
	metering := line("metering", "outbox")
	metering.Boundaries = []boundary.Boundary{boundary.Metering}
	given := []migrate.Line{line("billing", "outbox", "admission"), line("admission", "outbox"), line("outbox"), metering}
	ls, err := migrate.Ordered(given)
	require.NoError(t, err)
	require.Equal(t, []string{"outbox", "admission", "billing", "metering"}, names(ls))
	core, err := migrate.For(given, boundary.Core)
	require.NoError(t, err)
	require.Equal(t, []string{"outbox", "admission", "billing"}, names(core))
}

func TestOrderedRejectsBadLines(t *testing.T) {
	t.Parallel()
	_, err := migrate.Ordered([]migrate.Line{line("a")})
	require.NoError(t, err)
	_, err = migrate.Ordered([]migrate.Line{line("a"), line("a")})
	require.Error(t, err, "duplicate")
	_, err = migrate.Ordered([]migrate.Line{line("Bad-Name")})
	require.Error(t, err)
	noFS := line("nofs")
	noFS.FS = nil
	_, err = migrate.Ordered([]migrate.Line{noFS})
	require.Error(t, err)
	bad := line("badboundary")
	bad.Boundaries = []boundary.Boundary{"billing"}
	_, err = migrate.Ordered([]migrate.Line{bad})
	require.Error(t, err)

	_, err = migrate.Ordered([]migrate.Line{line("x", "y"), line("y", "x")})
	require.ErrorContains(t, err, "cycle")

	_, err = migrate.Ordered([]migrate.Line{line("x", "nope")})
	require.ErrorContains(t, err, "unknown line")
}

func TestFingerprintFollowsContent(t *testing.T) {
	t.Parallel()
	fa, err := migrate.Fingerprint([]migrate.Line{line("outbox")})
	require.NoError(t, err)
	fb, err := migrate.Fingerprint([]migrate.Line{line("outbox")})
	require.NoError(t, err)
	require.Equal(t, fa, fb)
	changed := line("outbox")
	changed.FS = fstest.MapFS{"00001_x.sql": {Data: []byte("-- +goose Up\nSELECT 2;\n")}}
	fc, err := migrate.Fingerprint([]migrate.Line{changed})
	require.NoError(t, err)
	require.NotEqual(t, fa, fc)
	// Another set of lines is another fingerprint, whatever order it is given in.
	fd, err := migrate.Fingerprint([]migrate.Line{line("outbox"), line("admission", "outbox")})
	require.NoError(t, err)
	require.NotEqual(t, fa, fd)
	fe, err := migrate.Fingerprint([]migrate.Line{line("admission", "outbox"), line("outbox")})
	require.NoError(t, err)
	require.Equal(t, fd, fe)
}

// Up refuses an empty list of lines: a caller that forgot its wiring fails
// loudly instead of migrating nothing.
func TestUpNeedsLines(t *testing.T) {
	t.Parallel()
	_, err := migrate.Up(t.Context(), "postgres://127.0.0.1:1/none", boundary.Core, nil, migrate.Opts{})
	require.ErrorContains(t, err, "no migration lines")
}

// Provision creates the four boundary databases, applies the outbox line to
// each (one version table per line), and a second run changes nothing.
func TestProvisionIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	srv := dbtest.Server(t)
	prefix := dbtest.NewPrefix(t)

	res, err := migrate.Provision(ctx, migrate.ProvisionParams{ServerURL: srv.URL, Prefix: prefix, Lines: []migrate.Line{schema.Line()}})
	require.NoError(t, err)
	require.Len(t, res.Created, 4)
	require.NotEmpty(t, res.Applied)
	for _, b := range boundary.All {
		conn, err := pgx.Connect(ctx, res.DSNs[b])
		require.NoError(t, err)
		var db string
		var versions int
		require.NoError(t, conn.QueryRow(ctx, "SELECT current_database(), (SELECT count(*) FROM public.goose_db_version_outbox WHERE version_id > 0)").Scan(&db, &versions))
		require.Equal(t, prefix+"_"+string(b), db)
		require.Equal(t, len(res.Applied)/4, versions)
		require.NoError(t, conn.Close(ctx))
	}

	again, err := migrate.Provision(ctx, migrate.ProvisionParams{ServerURL: srv.URL, Prefix: prefix, Lines: []migrate.Line{schema.Line()}})
	require.NoError(t, err)
	require.Empty(t, again.Created)
	require.Empty(t, again.Applied)

	_, err = migrate.Provision(ctx, migrate.ProvisionParams{ServerURL: srv.URL, Prefix: "Bad Prefix", Lines: []migrate.Line{schema.Line()}})
	require.Error(t, err)
}

// Roles are cluster-wide; concurrent creators race on CREATE ROLE and all
// succeed.
func TestEnsureRolesConcurrently(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	srv := dbtest.Server(t)
	role := fmt.Sprintf("owt_role_%s", uuid.NewString()[:8])
	t.Cleanup(func() { // t.Context() is cancelled before cleanups run: a background context
		conn, err := pgx.Connect(context.Background(), srv.URL)
		if err == nil {
			_, _ = conn.Exec(context.Background(), "DROP ROLE IF EXISTS "+role)
			_ = conn.Close(context.Background())
		}
	})
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := pgx.Connect(ctx, srv.URL)
			if err != nil {
				errs <- err
				return
			}
			defer func() { _ = conn.Close(ctx) }() // Terminate only: the server ends the session either way
			errs <- migrate.EnsureRoles(ctx, conn, []string{role, schema.RoleProducer})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}
