package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/release"
)

// `oceanway migrate --database-url URL --db-prefix PREFIX` creates the four
// boundary databases and applies every line; a second run changes nothing.
func TestMigrateCommandIsIdempotent(t *testing.T) {
	t.Parallel()
	srv := dbtest.Server(t)
	prefix := dbtest.NewPrefix(t)
	run := func(args ...string) string {
		var out, errOut bytes.Buffer
		code := Main(append([]string{"migrate"}, args...), strings.NewReader(""), &out, &errOut)
		require.Equal(t, 0, code, "stderr: %s", errOut.String())
		return out.String()
	}
	first := run("--database-url", srv.URL, "--db-prefix", prefix)
	for _, b := range []string{"core", "execution", "gateway", "metering"} {
		require.Contains(t, first, "created database "+prefix+"_"+b)
	}
	require.Contains(t, first, "line outbox")
	second := run("--database-url", srv.URL, "--db-prefix", prefix)
	require.Contains(t, second, "4 boundary database(s) up to date")
	require.NotContains(t, second, "created database")

	// A boundary with its own DSN is migrated where it is, not created.
	third := run("--boundary", "core", "--core-dsn", srv.DatabaseURL(prefix+"_core"))
	require.Contains(t, third, "1 boundary database(s) up to date")

	var out, errOut bytes.Buffer
	require.Equal(t, 1, Main([]string{"migrate", "--boundary", "billing", "--database-url", srv.URL}, strings.NewReader(""), &out, &errOut))
	require.Contains(t, errOut.String(), "unknown boundary")
}

// OB-BOOT-1: `oceanway migrate --adopt-legacy --evidence FILE` on a core
// database holding docs/examples/legacy-outbox.sql adopts it and writes the
// evidence; a second run writes the same evidence (but its time) and
// changes nothing.
func TestMigrateAdoptLegacy_OBBOOT1_EvidenceAndRerun(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}}).Core()
	_, err := release.Bootstrap(ctx, pool, release.BootstrapParams{
		ProjectionName: "operations_read_model", ProjectionVersion: 1, ReadinessProofRef: "test", SourceRelease: "test"})
	require.NoError(t, err)
	example, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", "legacy-outbox.sql"))
	require.NoError(t, err)
	_, err = pool.Exec(ctx, string(example))
	require.NoError(t, err)
	dsn := pool.Config().ConnString()

	dir := t.TempDir()
	run := func(file string) map[string]any {
		var out, errOut bytes.Buffer
		code := Main([]string{"migrate", "--boundary", "core", "--core-dsn", dsn, "--adopt-legacy", "--evidence", file},
			strings.NewReader(""), &out, &errOut)
		require.Equal(t, 0, code, "stderr: %s", errOut.String())
		require.Contains(t, out.String(), "adopted 8 legacy event(s)")
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		var ev map[string]any
		require.NoError(t, json.Unmarshal(b, &ev))
		delete(ev, "ranAt")
		return ev
	}
	first := run(filepath.Join(dir, "first.json"))
	require.EqualValues(t, 4, first["quarantinedTotal"])
	counts := first["counts"].(map[string]any)
	require.EqualValues(t, 4, counts["adopted_published"])
	require.EqualValues(t, 4, counts["adopted_open"])
	require.Contains(t, first, "bootstrapDefinition")
	require.Contains(t, first, "goldenRun")
	second := run(filepath.Join(dir, "second.json"))
	require.Equal(t, first["adoptedSetDigest"], second["adoptedSetDigest"])
	require.Equal(t, first["bootstrapDefinition"], second["bootstrapDefinition"])
	require.EqualValues(t, 8, second["counts"].(map[string]any)["already_adopted"])

	var out, errOut bytes.Buffer
	require.Equal(t, 1, Main([]string{"migrate", "--boundary", "core", "--core-dsn", dsn, "--adopt-legacy"}, strings.NewReader(""), &out, &errOut))
	require.Contains(t, errOut.String(), "--evidence")
}
