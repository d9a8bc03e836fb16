package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/bench/measure"
	"github.com/oceanway/core/internal/dbtest"
)

// oceanway bench at a tiny size: the table on stdout, the JSON report, a
// CPU profile, and no database left behind.
func TestBenchCLI(t *testing.T) {
	t.Parallel()
	srv := dbtest.Server(t)
	dir := t.TempDir()
	jsonPath, profile := filepath.Join(dir, "bench.json"), filepath.Join(dir, "cpu.pprof")
	r := runMain(t, nil, "bench", "--quiet", "--database-url", srv.URL, "--db-prefix", dbtest.NewPrefix(t),
		"--events", "20", "--tx-size", "5", "--producers", "2", "--concurrency", "4", "--poll-interval", "50ms",
		"--claim-cooldown", "5ms", "--json", jsonPath, "--cpuprofile", profile)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "consumed/s")
	require.Contains(t, r.stdout, "oceanway")

	var report measure.Report
	raw, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &report))
	require.Len(t, report.Runs, 1)
	require.Equal(t, 20, report.Runs[0].Latency.Count)
	require.Equal(t, 5, report.Runs[0].TxSize)
	require.Contains(t, report.Runs[0].Settings, "claim-cooldown=5ms", "the flag reaches the dispatchers' configuration")
	require.Empty(t, report.Databases)
	st, err := os.Stat(profile)
	require.NoError(t, err)
	require.Positive(t, st.Size())

	bad := runMain(t, nil, "bench", "--database-url", srv.URL, "--mode", "sideways")
	require.Equal(t, 1, bad.code)
	require.Contains(t, bad.stderr, "--mode")
}
