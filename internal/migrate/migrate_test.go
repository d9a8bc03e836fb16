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

	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/outbox/schema"
)

func line(name string, after ...string) migrate.Line {
	return migrate.Line{
		Name: name, Boundaries: []migrate.Boundary{migrate.Core}, After: after,
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

func TestRegistryOrdersLinesByDependency(t *testing.T) {
	t.Parallel()
	r := migrate.NewRegistry()
	require.NoError(t, r.Register(line("billing", "outbox", "admission")))
	require.NoError(t, r.Register(line("admission", "outbox")))
	require.NoError(t, r.Register(line("outbox")))
	metering := line("metering", "outbox")
	metering.Boundaries = []migrate.Boundary{migrate.Metering}
	require.NoError(t, r.Register(metering))
	ls, err := r.Lines()
	require.NoError(t, err)
	require.Equal(t, []string{"outbox", "admission", "billing", "metering"}, names(ls))
	core, err := r.LinesFor(migrate.Core)
	require.NoError(t, err)
	require.Equal(t, []string{"outbox", "admission", "billing"}, names(core))
}

func TestRegistryRejectsBadLines(t *testing.T) {
	t.Parallel()
	r := migrate.NewRegistry()
	require.NoError(t, r.Register(line("a")))
	require.Error(t, r.Register(line("a")), "duplicate")
	require.Error(t, r.Register(line("Bad-Name")))
	noFS := line("nofs")
	noFS.FS = nil
	require.Error(t, r.Register(noFS))
	bad := line("badboundary")
	bad.Boundaries = []migrate.Boundary{"billing"}
	require.Error(t, r.Register(bad))

	cyc := migrate.NewRegistry()
	require.NoError(t, cyc.Register(line("x", "y")))
	require.NoError(t, cyc.Register(line("y", "x")))
	_, err := cyc.Lines()
	require.ErrorContains(t, err, "cycle")

	unknown := migrate.NewRegistry()
	require.NoError(t, unknown.Register(line("x", "nope")))
	_, err = unknown.Lines()
	require.ErrorContains(t, err, "unknown line")
}

func TestFingerprintFollowsContent(t *testing.T) {
	t.Parallel()
	a, b := migrate.NewRegistry(), migrate.NewRegistry()
	require.NoError(t, a.Register(line("outbox")))
	require.NoError(t, b.Register(line("outbox")))
	fa, err := a.Fingerprint()
	require.NoError(t, err)
	fb, err := b.Fingerprint()
	require.NoError(t, err)
	require.Equal(t, fa, fb)
	c := migrate.NewRegistry()
	changed := line("outbox")
	changed.FS = fstest.MapFS{"00001_x.sql": {Data: []byte("-- +goose Up\nSELECT 2;\n")}}
	require.NoError(t, c.Register(changed))
	fc, err := c.Fingerprint()
	require.NoError(t, err)
	require.NotEqual(t, fa, fc)
}

// Provision creates the four boundary databases, applies the outbox line to
// each (one version table per line), and a second run changes nothing.
func TestProvisionIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := dbtest.Server(t)
	prefix := dbtest.NewPrefix(t)

	res, err := migrate.Provision(ctx, migrate.ProvisionParams{ServerURL: srv.URL, Prefix: prefix})
	require.NoError(t, err)
	require.Len(t, res.Created, 4)
	require.NotEmpty(t, res.Applied)
	for _, b := range migrate.Boundaries {
		conn, err := pgx.Connect(ctx, res.DSNs[b])
		require.NoError(t, err)
		var db string
		var versions int
		require.NoError(t, conn.QueryRow(ctx, "SELECT current_database(), (SELECT count(*) FROM public.goose_db_version_outbox WHERE version_id > 0)").Scan(&db, &versions))
		require.Equal(t, prefix+"_"+string(b), db)
		require.Equal(t, len(res.Applied)/4, versions)
		require.NoError(t, conn.Close(ctx))
	}

	again, err := migrate.Provision(ctx, migrate.ProvisionParams{ServerURL: srv.URL, Prefix: prefix})
	require.NoError(t, err)
	require.Empty(t, again.Created)
	require.Empty(t, again.Applied)

	_, err = migrate.Provision(ctx, migrate.ProvisionParams{ServerURL: srv.URL, Prefix: "Bad Prefix"})
	require.Error(t, err)
}

// Roles are cluster-wide; concurrent creators race on CREATE ROLE and all
// succeed.
func TestEnsureRolesConcurrently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := dbtest.Server(t)
	role := fmt.Sprintf("owt_role_%s", uuid.NewString()[:8])
	t.Cleanup(func() {
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
			defer conn.Close(ctx)
			errs <- migrate.EnsureRoles(ctx, conn, []string{role, schema.RoleProducer})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}
