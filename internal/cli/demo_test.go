package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/dbtest"
)

// The README's main job end to end through the command: a small demo on the
// test server passes every invariant, writes its JSON summary, and a second
// run on the same (kept) databases is refused.
func TestDemoCommandPassesAndRefusesReuse(t *testing.T) {
	// Not parallel: with the Metering input processor every boundary's
	// dispatchers deliver, and two demos at once exceed a shared server's
	// default 100 connections.
	srv := dbtest.Server(t)
	prefix := dbtest.NewPrefix(t)
	summaryPath := filepath.Join(t.TempDir(), "summary.json")
	r := runMain(t, nil, "demo", "--runs", "30", "--plain", "--database-url", srv.URL, "--db-prefix", prefix, "--json", summaryPath)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "verdict                                   PASSED")

	raw, err := os.ReadFile(summaryPath)
	require.NoError(t, err)
	var s struct {
		Passed       bool  `json:"passed"`
		Events       int64 `json:"events"`
		Acknowledged int64 `json:"acknowledged"`
		Invariants   []struct {
			Name string `json:"name"`
			OK   bool   `json:"ok"`
		} `json:"invariants"`
	}
	require.NoError(t, json.Unmarshal(raw, &s))
	require.True(t, s.Passed)
	// Two admission events per run, then one billing.finalization.committed@1
	// per finalized reservation: every one acknowledged.
	require.GreaterOrEqual(t, s.Acknowledged, int64(60))
	require.Equal(t, s.Events, s.Acknowledged)
	require.NotEmpty(t, s.Invariants)

	again := runMain(t, nil, "demo", "--runs", "5", "--plain", "--database-url", srv.URL, "--db-prefix", prefix)
	require.NotEqual(t, 0, again.code)
	require.Contains(t, again.stderr, "already holds")
}

// `oceanway demo --transport http` (issue 21): the same demo with every
// consumer behind a loopback HTTP endpoint passes every invariant; an unknown
// transport is refused.
func TestDemoCommandOverHTTP(t *testing.T) {
	// Not parallel: with the Metering input processor every boundary's
	// dispatchers deliver, and two demos at once exceed a shared server's
	// default 100 connections.
	srv := dbtest.Server(t)
	prefix := dbtest.NewPrefix(t)
	summaryPath := filepath.Join(t.TempDir(), "summary.json")
	r := runMain(t, nil, "demo", "--transport", "http", "--runs", "20", "--plain", "--database-url", srv.URL, "--db-prefix", prefix, "--json", summaryPath)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "transport=http")
	raw, err := os.ReadFile(summaryPath)
	require.NoError(t, err)
	var s struct {
		Passed       bool   `json:"passed"`
		Transport    string `json:"transport"`
		Events       int64  `json:"events"`
		Acknowledged int64  `json:"acknowledged"`
	}
	require.NoError(t, json.Unmarshal(raw, &s))
	require.True(t, s.Passed)
	require.Equal(t, "http", s.Transport)
	require.GreaterOrEqual(t, s.Acknowledged, int64(40), "two admission events per run, then the finalizations")
	require.Equal(t, s.Events, s.Acknowledged)

	bad := runMain(t, nil, "demo", "--transport", "nats", "--runs", "1", "--plain", "--database-url", srv.URL, "--db-prefix", dbtest.NewPrefix(t))
	require.NotEqual(t, 0, bad.code)
	require.Contains(t, bad.stderr, `--transport "nats"`)
}
