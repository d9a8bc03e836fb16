package cli

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/demo"
	"github.com/oceanway/core/internal/gateway/simprovider"
	"github.com/oceanway/core/internal/lines"
	"github.com/oceanway/core/internal/outbox/dispatcher"
)

// caseHeavyDemo runs the demo's loop on fresh databases (in process, or
// over HTTP with chaos) with a provider that often cannot vouch for usage
// (conflicting or unavailable), so many reservations go through a
// Finalization reconciliation case, and desk tunes the case desk.
func caseHeavyDemo(t *testing.T, runs int, transportName string, chaos bool, desk func(*demo.Cases)) *demo.Summary {
	t.Helper()
	srv := dbtest.Server(t)
	ctx := t.Context()
	var lease time.Duration
	if chaos {
		lease = 2 * time.Second // as demo --chaos: lease recoveries within the run
	}
	disp := dispatcherFlags{cfg: dispatcher.Config{LeaseDuration: lease}.WithDefaults(), dispatchers: 1, consumerBatch: defaultConsumerBatch}
	pools, err := demoDatabases(ctx, srv.URL, demoOptions{disp: disp, prefix: dbtest.NewPrefix(t), workers: 4, lines: lines.All()}, func(string, ...any) {})
	require.NoError(t, err)
	defer pools.Close()
	loop, err := newLoopRuntime(pools, disp, transportName)
	require.NoError(t, err)
	defer loop.Close()
	scenario := demo.NewScenario(pools[boundary.Core], pools[boundary.Execution], pools[boundary.Gateway], 5)
	scenario.Provider = simprovider.New(simprovider.Config{Seed: 5, RejectPercent: 10, Weights: map[string]int{
		simprovider.ScenarioConflicting: 30, simprovider.ScenarioUnavailable: 15, simprovider.ScenarioPrompt: 40,
		simprovider.ScenarioCorrectedDown: 15}})
	cfg := loop.config(demo.Config{Runs: runs, AdmitWorkers: 4, Timeout: 4 * time.Minute, Scenario: scenario, Chaos: chaos,
		Progress: io.Discard, ProgressEvery: time.Hour})
	require.NotNil(t, cfg.Cases, "the loop runtime carries the case desk")
	d := *cfg.Cases
	desk(&d)
	cfg.Cases = &d
	s, err := demo.Run(ctx, loop.rt, pools, scenario.Run, cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			var table strings.Builder
			s.WriteTable(&table)
			t.Log(table.String())
		}
	})
	return s
}

func invariantsOf(s *demo.Summary) map[string]demo.Check {
	out := map[string]demo.Check{}
	for _, c := range s.Invariants {
		out[c.Name] = c
	}
	return out
}

// OP-1 (issue 31 item 8): with usage the provider cannot vouch for, each
// such reservation enters a case; the operators' first resolutions
// re-evaluate before the provider's fix, so the next case generation opens
// (pending successor, then open); once the provider reported its
// successor availabilities, alice requests, bob approves, alice applies, and
// every reservation finalizes exactly once with no case left open, each
// resolution through the whole chain.
func TestDemoClosesEveryCaseThroughItsGenerations(t *testing.T) {
	// Not parallel: a whole loop's dispatchers on a shared server.
	s := caseHeavyDemo(t, 20, demo.TransportInProcess, false, func(c *demo.Cases) { c.FixFromRound = 2 })
	for _, c := range s.Invariants {
		require.True(t, c.OK, "invariant %s: %s", c.Name, c.Detail)
	}
	require.True(t, s.Passed)
	inv := invariantsOf(s)
	for _, name := range []string{"every_reservation_finalized", "finalized_exactly_once", "every_case_resolved", "case_event_once", "case_resolution_chain"} {
		require.Contains(t, inv, name)
	}
	c, l := s.Cases, s.Ledger
	require.NotNil(t, c)
	require.Positive(t, c.Reservations, "the provider's conflicting and unavailable usage opened cases")
	require.Equal(t, 2*c.Reservations, c.Opened, "each reservation's first resolution, without the fix, opened generation 2")
	require.Equal(t, c.Reservations, c.Successors)
	require.EqualValues(t, 2, c.MaxGen)
	require.Equal(t, c.Opened, c.Resolved)
	require.Zero(t, c.Open)
	require.Equal(t, c.Opened, c.Requests, "one request per case generation")
	require.Equal(t, c.Opened, c.Approvals)
	require.Equal(t, c.Opened, c.Grants)
	require.EqualValues(t, 2, c.Rounds)
	require.Equal(t, c.Reservations, c.ResolvedWithFix, "the second round's requests name the successor availabilities")
	require.Positive(t, c.ToResolutionP50Milli)
	require.GreaterOrEqual(t, c.ToResolutionMaxMilli, c.ToResolutionP50Milli)
	require.Positive(t, s.Scenario.FixedAttempts)
	require.EqualValues(t, 20, l.Finalized)
	require.Zero(t, l.InCase+l.WaitingReconciliation+l.StillOpen)
	require.Equal(t, c.Opened, l.ReconciliationRequired, "one reconciliation_required evaluation per case generation")
	require.Zero(t, s.Scenario.CorrectionsNotFinalized, "every reservation finalized before the post-finality corrections")
	require.Equal(t, s.Deliveries, s.Acknowledged)
}

// OP-1 (issue 31 item 8): a desk that cannot converge fails plainly: with
// one round and the provider's fix withheld from it, every re-evaluation
// still conflicts, so a case stays open; the summary fails
// cases_converged with the open cases and every_case_resolved.
func TestDemoFailsPlainlyWhenCasesDoNotConverge(t *testing.T) {
	s := caseHeavyDemo(t, 12, demo.TransportInProcess, false, func(c *demo.Cases) { c.Rounds, c.FixFromRound = 1, 2 })
	require.False(t, s.Passed)
	inv := invariantsOf(s)
	require.False(t, inv["cases_converged"].OK)
	require.Contains(t, inv["cases_converged"].Detail, "cases did not converge: after 1 rounds")
	require.False(t, inv["every_case_resolved"].OK)
	require.False(t, inv["every_reservation_finalized"].OK)
	require.Positive(t, s.Cases.Open)
	require.Equal(t, s.Cases.Open, s.Ledger.InCase)
	require.True(t, inv["finalized_exactly_once"].OK)
	require.True(t, inv["case_resolution_chain"].OK)
}

// OP-1 (issue 31 item 8), transport http with chaos: the case pairs reach
// the projector and the coordinator over HTTP, the projector verifies them
// with Billing's reads over HTTP, consumer and owner answers are dropped
// after the callee committed; every case still closes and every
// reservation finalizes exactly once.
func TestDemoClosesEveryCaseOverHTTPWithChaos(t *testing.T) {
	s := caseHeavyDemo(t, 16, demo.TransportHTTP, true, func(*demo.Cases) {})
	for _, c := range s.Invariants {
		require.True(t, c.OK, "invariant %s: %s", c.Name, c.Detail)
	}
	require.Equal(t, demo.TransportHTTP, s.Transport)
	require.Positive(t, s.Cases.Opened)
	require.Equal(t, s.Cases.Opened, s.Cases.Resolved)
	require.Zero(t, s.Cases.Open)
	require.EqualValues(t, 16, s.Ledger.Finalized)
}
