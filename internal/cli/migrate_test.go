package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/dbtest"
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
