package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
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
		Deliveries   int64 `json:"deliveries"`
		Acknowledged int64 `json:"acknowledged"`
		Invariants   []struct {
			Name string `json:"name"`
			OK   bool   `json:"ok"`
		} `json:"invariants"`
		Scenario struct {
			Down         int64 `json:"postFinalityCorrectionsDown"`
			Up           int64 `json:"postFinalityCorrectionsUp"`
			NotFinalized int64 `json:"postFinalityCorrectionsNotFinalized"`
		} `json:"scenario"`
		Ledger struct {
			Reservations int64 `json:"reservations"`
			Finalized    int64 `json:"finalized"`
			InCase       int64 `json:"inReconciliationCase"`
			Waiting      int64 `json:"waitingForReconciliation"`
			StillOpen    int64 `json:"stillOpen"`
		} `json:"ledger"`
		Cases *struct {
			Opened   int64 `json:"opened"`
			Open     int64 `json:"open"`
			Resolved int64 `json:"resolved"`
		} `json:"cases"`
		CatchUp *struct {
			Refunds       int64 `json:"refunds"`
			Exposures     int64 `json:"lateSettlementExposures"`
			OpenExposures int64 `json:"openBlockedExposures"`
			Fences        int64 `json:"fences"`
			CaughtUp      int64 `json:"fencesCaughtUp"`
			Pending       int64 `json:"fencesPendingVerification"`
		} `json:"catchUp"`
		LateCases *struct {
			Exposures            int64 `json:"exposures"`
			Commands             int64 `json:"lateSettlementCommands"`
			ResolvedByCommand    int64 `json:"exposuresResolvedByCommand"`
			ResolvedByTransition int64 `json:"exposuresResolvedByLaterTransition"`
			Unresolved           int64 `json:"exposuresUnresolved"`
			OperationsOpen       int64 `json:"operationsCasesOpen"`
		} `json:"lateSettlementCases"`
		Cost *struct {
			FinalizedPerSecond float64            `json:"finalizedPerSecond"`
			ProcessCPUMillis   float64            `json:"processCpuMillisPerRun"`
			CommitsPerRun      float64            `json:"commitsPerRun"`
			CommitsByOwner     map[string]float64 `json:"commitsPerRunByDatabase"`
			Note               string             `json:"note"`
		} `json:"loopCost"`
	}
	require.NoError(t, json.Unmarshal(raw, &s))
	require.True(t, s.Passed)
	// issue 35 item 1: the demo summary carries the loop benchmark's figures
	// for its own run (every owner database commits something per run).
	require.NotNil(t, s.Cost, "the summary reports the loop's cost")
	require.Empty(t, s.Cost.Note)
	require.Positive(t, s.Cost.FinalizedPerSecond)
	require.Positive(t, s.Cost.ProcessCPUMillis)
	require.Len(t, s.Cost.CommitsByOwner, 4)
	for owner, commits := range s.Cost.CommitsByOwner {
		require.Positive(t, commits, owner)
	}
	require.Contains(t, r.stdout, "loop cost: commits per run")
	// issue 16 item 6: the demo runs the settlement catch-up worker; every
	// post-finality correction the provider sent became a transition (down:
	// a refund, up: a blocked late exposure, never charged), and every
	// catch-up fence settled down (none left pending).
	require.NotNil(t, s.CatchUp, "the summary reports the catch-up")
	require.Positive(t, s.CatchUp.Fences, "each finalized dimension opens its catch-up fence")
	require.Zero(t, s.CatchUp.Pending)
	require.GreaterOrEqual(t, s.CatchUp.Refunds, s.Scenario.Down)
	require.GreaterOrEqual(t, s.CatchUp.Exposures, s.Scenario.Up)
	// issue 32: every exposure opened its case and the late settlement desk
	// funded it (or a later transition resolved it): none stays open.
	require.Zero(t, s.CatchUp.OpenExposures)
	require.NotNil(t, s.LateCases, "the summary reports the late settlement cases")
	require.Equal(t, s.CatchUp.Exposures, s.LateCases.Exposures)
	require.Equal(t, s.LateCases.Exposures, s.LateCases.ResolvedByCommand+s.LateCases.ResolvedByTransition)
	require.Equal(t, s.LateCases.Commands, s.LateCases.ResolvedByCommand)
	require.Zero(t, s.LateCases.Unresolved)
	require.Zero(t, s.LateCases.OperationsOpen)
	names := map[string]bool{}
	for _, inv := range s.Invariants {
		names[inv.Name] = inv.OK
	}
	for _, name := range []string{"transitions_contiguous", "transition_applied_once", "transition_event_once",
		"settled_within_reserved", "exposure_recorded", "catch_up_settled_down", "no_negative_balance", "ledger_balanced",
		"every_reservation_finalized", "finalized_exactly_once", "every_case_resolved", "case_event_once", "case_resolution_chain"} {
		require.True(t, names[name], "invariant %s reported and ok", name)
	}
	// issue 31 item 8: every reservation finalized, none left in a case or
	// waiting; every case the demo opened was resolved (the summary
	// reports them even when the provider needed none in so few runs).
	require.EqualValues(t, 30, s.Ledger.Reservations)
	require.Equal(t, s.Ledger.Reservations, s.Ledger.Finalized)
	require.Zero(t, s.Ledger.InCase+s.Ledger.Waiting+s.Ledger.StillOpen)
	require.NotNil(t, s.Cases, "the summary reports the cases")
	require.Zero(t, s.Cases.Open)
	require.Equal(t, s.Cases.Opened, s.Cases.Resolved)
	require.Zero(t, s.Scenario.NotFinalized)
	require.Contains(t, r.stdout, "cases: opened (reservations)")
	require.NotContains(t, r.stdout, "reconciliation chain (not built)")
	// Two admission events per run, then one billing.finalization.committed@1
	// per finalized reservation (and the case pairs: a resolution has two
	// deliveries): every delivery acknowledged.
	require.GreaterOrEqual(t, s.Acknowledged, int64(60))
	require.GreaterOrEqual(t, s.Deliveries, s.Events)
	require.Equal(t, s.Deliveries, s.Acknowledged)
	require.NotEmpty(t, s.Invariants)

	// issue 15: inspect shows a finalized reservation's postings and its
	// decision chain; no fence is left waiting.
	core, err := pgx.Connect(t.Context(), srv.DatabaseURL(prefix+"_core"))
	require.NoError(t, err)
	defer func() { _ = core.Close(context.WithoutCancel(t.Context())) }()
	var finalized string
	require.NoError(t, core.QueryRow(t.Context(), `SELECT billing_reservation_id::text FROM billing.finalization_committed LIMIT 1`).Scan(&finalized))
	ins := runMain(t, nil, "inspect", "reservation", finalized, "--database-url", srv.URL, "--db-prefix", prefix)
	require.Equal(t, 0, ins.code, ins.stderr)
	require.Contains(t, ins.stdout, "billing: reservation ")
	require.Contains(t, ins.stdout, "finalization fence: committed")
	require.Contains(t, ins.stdout, "ledger postings (")
	require.Regexp(t, `finalization +[0-9]+ +customer_wallet`, ins.stdout)
	require.Contains(t, ins.stdout, "1 finalization(s))")
	require.Regexp(t, `settle_and_release_remainder|release_all`, ins.stdout)
	var unfinished int
	require.NoError(t, core.QueryRow(t.Context(), `SELECT count(*) FROM billing.billing_finalization_fences
		WHERE coordination_state <> 'committed'`).Scan(&unfinished))
	require.Zero(t, unfinished)

	again := runMain(t, nil, "demo", "--runs", "5", "--plain", "--database-url", srv.URL, "--db-prefix", prefix)
	require.NotEqual(t, 0, again.code)
	require.Contains(t, again.stderr, "already holds")
}

// `oceanway demo --transport http` (issues 21 and 34): the same demo with
// every consumer and every owner read behind loopback HTTP endpoints passes
// every invariant; an unknown transport is refused.
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
		Deliveries   int64  `json:"deliveries"`
		Acknowledged int64  `json:"acknowledged"`
		ReadsOver    string `json:"ownerReadsOver"`
		ReadCalls    int64  `json:"ownerReadCalls"`
	}
	require.NoError(t, json.Unmarshal(raw, &s))
	require.True(t, s.Passed)
	require.Equal(t, "http", s.Transport)
	// Issue 34: the workers reached the other owners only over HTTP.
	require.Equal(t, "http", s.ReadsOver)
	require.Positive(t, s.ReadCalls)
	require.Contains(t, r.stdout, "owner reads")
	require.GreaterOrEqual(t, s.Acknowledged, int64(40), "two admission events per run, then the finalizations")
	require.GreaterOrEqual(t, s.Deliveries, s.Events)
	require.Equal(t, s.Deliveries, s.Acknowledged)
	require.Regexp(t, `invariant every_case_resolved\s+ok`, r.stdout)
	require.Regexp(t, `invariant every_reservation_finalized\s+ok`, r.stdout)

	bad := runMain(t, nil, "demo", "--transport", "nats", "--runs", "1", "--plain", "--database-url", srv.URL, "--db-prefix", dbtest.NewPrefix(t))
	require.NotEqual(t, 0, bad.code)
	require.Contains(t, bad.stderr, `--transport "nats"`)
}

// `oceanway demo --processes` (issue 34): each owner is its own `oceanway
// serve --owner` process with only its own database, two processes per
// owner sharing it; the loop passes every invariant, pg_stat_activity never
// shows an owner process on another owner's database, and both processes
// of Core and of Metering finished Work (each Work exactly once: the
// invariants).
func TestDemoCommandOwnerProcesses(t *testing.T) {
	// Not parallel: eight owner processes share the server's connections.
	t.Setenv(reexecCLI, "1")
	srv := dbtest.Server(t)
	summaryPath := filepath.Join(t.TempDir(), "summary.json")
	r := runMain(t, nil, "demo", "--processes", "--replicas", "2", "--runs", "16", "--admit-workers", "4", "--plain",
		"--database-url", srv.URL, "--db-prefix", dbtest.NewPrefix(t), "--json", summaryPath)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	raw, err := os.ReadFile(summaryPath)
	require.NoError(t, err)
	var s struct {
		Passed     bool `json:"passed"`
		Invariants []struct {
			Name string `json:"name"`
			OK   bool   `json:"ok"`
		} `json:"invariants"`
		Processes struct {
			Samples     int              `json:"samples"`
			Connections int64            `json:"connections"`
			Sessions    map[string]int64 `json:"sessions"`
			Foreign     []string         `json:"foreign"`
			Processes   []struct {
				Owner    string           `json:"owner"`
				Replica  int              `json:"replica"`
				Finished map[string]int64 `json:"finished"`
			} `json:"processes"`
		} `json:"processes"`
	}
	require.NoError(t, json.Unmarshal(raw, &s))
	require.True(t, s.Passed)
	require.Positive(t, s.Processes.Samples)
	require.Positive(t, s.Processes.Connections)
	require.Empty(t, s.Processes.Foreign)
	require.Contains(t, r.stdout, "invariant owner_processes_isolated        ok")
	require.Contains(t, r.stdout, "invariant owner_processes_supervised      ok")
	// issue 31 item 8: the core owner processes enter the cases, the demo
	// process runs the case commands against the core database and says so.
	require.Regexp(t, `invariant every_case_resolved\s+ok`, r.stdout)
	require.Regexp(t, `invariant every_reservation_finalized\s+ok`, r.stdout)
	require.Contains(t, r.stdout, "cases: commands run")
	for _, o := range []string{"core", "execution", "gateway", "metering"} {
		require.Positive(t, s.Processes.Sessions[o], "sessions of %s were sampled", o)
	}
	require.Len(t, s.Processes.Processes, 8)
	for _, p := range s.Processes.Processes {
		switch p.Owner {
		case "core":
			require.Positive(t, p.Finished["billing_finalization"]+p.Finished["billing_settlement_catch_up"], "core #%d finished Work", p.Replica)
		case "metering":
			require.Positive(t, p.Finished["metering_eligibility"], "metering #%d finished Work", p.Replica)
		}
	}
}

// `oceanway demo --processes --chaos` (issue 34): owner processes killed
// with SIGKILL at random and started again; the callers retry their reads
// and deliveries and the loop converges with every invariant.
func TestDemoCommandOwnerProcessesChaos(t *testing.T) {
	t.Setenv(reexecCLI, "1")
	srv := dbtest.Server(t)
	r := runMain(t, nil, "demo", "--processes", "--chaos", "--runs", "24", "--admit-workers", "4", "--plain",
		"--database-url", srv.URL, "--db-prefix", dbtest.NewPrefix(t))
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	require.Regexp(t, `chaos: owner processes killed/restarted\s+[1-9]\d* / [1-9]`, r.stdout)
	require.Contains(t, r.stdout, "verdict                                   PASSED")
}

// `oceanway demo --transport http --chaos` (issues 21 and 34): on top of the
// dispatcher chaos, one consumer answer and one owner read answer in 20 are
// dropped after the callee committed (an owner's validation receipt
// included); the callers retry and every invariant holds.
func TestDemoCommandOverHTTPChaos(t *testing.T) {
	srv := dbtest.Server(t)
	summaryPath := filepath.Join(t.TempDir(), "summary.json")
	r := runMain(t, nil, "demo", "--transport", "http", "--chaos", "--runs", "20", "--plain", "--database-url", srv.URL,
		"--db-prefix", dbtest.NewPrefix(t), "--json", summaryPath)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	raw, err := os.ReadFile(summaryPath)
	require.NoError(t, err)
	var s struct {
		Passed              bool  `json:"passed"`
		OwnerAnswersDropped int64 `json:"ownerAnswersDropped"`
		Unanswered          int64 `json:"ownerReadsUnanswered"`
	}
	require.NoError(t, json.Unmarshal(raw, &s))
	require.True(t, s.Passed)
	require.Positive(t, s.OwnerAnswersDropped, "owner answers were dropped")
	require.GreaterOrEqual(t, s.Unanswered, s.OwnerAnswersDropped, "each dropped answer was a call the caller saw fail and retried")
}

// `oceanway demo --via api` (issue 33 item 3): the scenario drives every
// run through the platform API over HTTP with the generated client (Core's
// admitRun, issueRunExecutionToken and getReservation, Execution's openRun,
// createAttempt, finalizeAttemptEligibility and closeRun, the Gateway's
// dispatchAttempt and reportProviderObservation) and the loop passes every
// invariant. Each owner's idempotency table holds the keys of exactly those
// calls (none written by the in-process driver), proving the calls went
// through the API; --via with --processes and an unknown --via are refused.
func TestDemoCommandViaAPI(t *testing.T) {
	// Not parallel: a whole loop's dispatchers on a shared server.
	srv := dbtest.Server(t)
	prefix := dbtest.NewPrefix(t)
	summaryPath := filepath.Join(t.TempDir(), "summary.json")
	const runs = 20
	r := runMain(t, nil, "demo", "--via", "api", "--runs", fmt.Sprint(runs), "--plain", "--database-url", srv.URL, "--db-prefix", prefix, "--json", summaryPath)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "through the platform API at http://127.0.0.1:")
	raw, err := os.ReadFile(summaryPath)
	require.NoError(t, err)
	var s struct {
		Passed bool   `json:"passed"`
		Driver string `json:"driver"`
		Mix    struct {
			Attempts     int64 `json:"attempts"`
			Observations int64 `json:"observations"`
		} `json:"scenario"`
	}
	require.NoError(t, json.Unmarshal(raw, &s))
	require.True(t, s.Passed)
	require.Contains(t, s.Driver, "platform API over HTTP")

	keys := func(b, table, op string) int64 {
		conn, err := pgx.Connect(t.Context(), srv.DatabaseURL(prefix+"_"+b))
		require.NoError(t, err)
		defer func() { _ = conn.Close(context.Background()) }()
		var n int64
		require.NoError(t, conn.QueryRow(t.Context(), "SELECT count(*) FROM "+table+" WHERE operation_id = $1 AND caller_workload = 'platform'", op).Scan(&n))
		return n
	}
	for op, want := range map[string]int64{"admitRun": runs, "issueRunExecutionToken": runs} {
		require.Equal(t, want, keys("core", "admission.api_idempotency_keys", op), op)
	}
	for op, want := range map[string]int64{"openRun": runs, "closeRun": runs, "createAttempt": s.Mix.Attempts, "finalizeAttemptEligibility": s.Mix.Attempts} {
		require.Equal(t, want, keys("execution", "execution.api_idempotency_keys", op), op)
	}
	require.Equal(t, s.Mix.Attempts, keys("gateway", "gateway.api_idempotency_keys", "dispatchAttempt"))
	require.Equal(t, s.Mix.Observations, keys("gateway", "gateway.api_idempotency_keys", "reportProviderObservation"))

	// Refused before anything runs: --api without --keys, an unknown
	// --via, --keys without --api.
	for want, args := range map[string][]string{"--keys D": {"--via", "api", "--api", "http://127.0.0.1:1"},
		`--via "grpc"`: {"--via", "grpc"}, "--keys goes with --api": {"--keys", "/nonexistent"}} {
		bad := runMain(t, nil, append([]string{"demo", "--runs", "1", "--plain", "--database-url", srv.URL, "--db-prefix", dbtest.NewPrefix(t)}, args...)...)
		require.NotEqual(t, 0, bad.code, args)
		require.Contains(t, bad.stderr, want, args)
	}
}

// `oceanway demo --processes --via api` (issue 33 with issue 34): each
// owner process serves its own part of the platform API, and the scenario
// calls each operation at its owner's process (Core signs the run token,
// Execution verifies it and reads Core and the Gateway over HTTP); every
// invariant holds and each owner's own database holds the keys of its own
// operations only.
func TestDemoCommandOwnerProcessesViaAPI(t *testing.T) {
	// Not parallel: four owner processes share the server's connections.
	t.Setenv(reexecCLI, "1") // the owner processes are this test binary running the CLI
	srv := dbtest.Server(t)
	prefix := dbtest.NewPrefix(t)
	r := runMain(t, nil, "demo", "--processes", "--via", "api", "--runs", "12", "--plain", "--database-url", srv.URL, "--db-prefix", prefix)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "through its own process's platform API")
	require.Contains(t, r.stdout, "verdict                                   PASSED")
	count := func(b, table string) (n int64) {
		conn, err := pgx.Connect(t.Context(), srv.DatabaseURL(prefix+"_"+b))
		require.NoError(t, err)
		defer func() { _ = conn.Close(context.Background()) }()
		require.NoError(t, conn.QueryRow(t.Context(), "SELECT count(*) FROM "+table).Scan(&n))
		return n
	}
	require.EqualValues(t, 24, count("core", "admission.api_idempotency_keys"), "admitRun and issueRunExecutionToken of 12 runs")
	require.Positive(t, count("execution", "execution.api_idempotency_keys"))
	require.Positive(t, count("gateway", "gateway.api_idempotency_keys"))
}
