package cli_test

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/bench/loop"
	"github.com/oceanway/core/internal/dbtest"
)

// issue 35 item 1: `oceanway bench --mode loop` at a tiny size, at
// saturation and at an offered 20 runs/s: every run admitted, every
// reservation finalized or waiting for reconciliation, commits and rows
// read per run measured in every database, p50 ≤ p99, the demo's
// invariants checked, the JSON and the chart written, nothing left behind.
// No timing is asserted.
func TestBenchLoopCLIReportIsConsistent(t *testing.T) {
	// Not parallel: the whole loop's pools on four databases (as the demo
	// command's test).
	srv := dbtest.Server(t)
	dir := t.TempDir()
	jsonPath, svgPath, profile := filepath.Join(dir, "loop.json"), filepath.Join(dir, "loop.svg"), filepath.Join(dir, "loop.cpu")
	const runs = 20
	r := runMain(t, nil, "bench", "--mode", "loop", "--quiet", "--database-url", srv.URL, "--db-prefix", dbtest.NewPrefix(t),
		"--runs", "20", "--rate-sweep", "0,20", "--drivers", "4", "--stats-settle", "1s", "--json", jsonPath, "--svg", svgPath, "--cpuprofile", profile)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "finalized runs/s")
	require.Contains(t, r.stdout, "saturation (4 drivers)")

	prof, err := os.Stat(profile)
	require.NoError(t, err, "--cpuprofile writes the loop's CPU profile")
	require.Positive(t, prof.Size())

	raw, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var report loop.Report
	require.NoError(t, json.Unmarshal(raw, &report))
	require.Len(t, report.Cases, 2)
	require.Empty(t, report.Databases, "the databases are dropped")
	for i, c := range report.Cases {
		require.Equal(t, runs, c.Runs)
		require.EqualValues(t, runs, c.Admitted, "case %d: admitted = runs", i)
		require.EqualValues(t, runs, c.Finalized+c.WaitingReconciliation, "case %d: finalized + waiting = runs", i)
		require.Zero(t, c.StillOpen)
		require.Positive(t, c.Finalized)
		require.Positive(t, c.FinalizedPerSecond)
		require.Positive(t, c.AdmittedPerSecond)
		require.LessOrEqual(t, c.FinalizeP50Millis, c.FinalizeP99Millis)
		// The latency without the disputed runs is measured too.
		require.Positive(t, c.UndisputedP50Millis)
		require.LessOrEqual(t, c.UndisputedP50Millis, c.UndisputedP99Millis)
		require.Positive(t, c.CommitsPerRun)
		require.Positive(t, c.ProcessMillisPerRun)
		require.Len(t, c.Databases, 4, "core, execution, gateway, metering")
		for _, d := range c.Databases {
			require.Positive(t, d.CommitsPerRun, "case %d: %s commits per run", i, d.Boundary)
		}
		require.True(t, c.Passed)
		require.NotEmpty(t, c.Invariants, "the demo's invariants are checked")
		for _, ch := range c.Invariants {
			require.True(t, ch.OK, "invariant %s: %s", ch.Name, ch.Detail)
		}
		require.Equal(t, runs, c.Driver.Scenario.Count)
	}
	require.Zero(t, report.Cases[0].Rate, "the first case is saturation")
	require.Zero(t, report.Cases[0].Driver.Lag.Count)
	require.LessOrEqual(t, report.Cases[0].Driver.MaxInFlight, 4)
	require.EqualValues(t, 20, report.Cases[1].Rate)
	require.EqualValues(t, 20, report.Cases[1].OfferedPerSecond)
	require.Equal(t, runs, report.Cases[1].Driver.Lag.Count, "a lag per scheduled start")

	svg, err := os.ReadFile(svgPath)
	require.NoError(t, err)
	var doc struct {
		XMLName xml.Name `xml:"svg"`
	}
	require.NoError(t, xml.Unmarshal(svg, &doc))

	bad := runMain(t, nil, "bench", "--mode", "loop", "--database-url", srv.URL, "--rate", "-1")
	require.Equal(t, 1, bad.code)
	require.Contains(t, bad.stderr, "rates ≥ 0")
}
