package metering_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/metering"
)

// meteringSeries scrapes Metering's collector into name{k="v"} → value.
func meteringSeries(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			if len(m.GetLabel()) > 0 {
				var ls []string
				for _, l := range m.GetLabel() {
					ls = append(ls, l.GetName()+`="`+l.GetValue()+`"`)
				}
				key += "{" + strings.Join(ls, ",") + "}"
			}
			out[key] = m.GetGauge().GetValue()
		}
	}
	return out
}

// meteringZero is every series of Metering's collector at zero: the
// bounded lanes and cost lane states exist before their first value.
func meteringZero() map[string]float64 {
	return map[string]float64{
		`oceanway_metering_blocked_work{lane="eligibility_and_settlement_input"}`: 0,
		`oceanway_metering_blocked_work{lane="provider_cost"}`:                    0,
		`oceanway_metering_settlement_inputs_awaiting_evidence`:                   0,
		`oceanway_metering_settlement_inputs_reconciliation_required`:             0,
		`oceanway_metering_cost_lanes{state="waiting_for_evidence"}`:              0,
		`oceanway_metering_cost_lanes{state="reconciliation_required"}`:           0,
		`oceanway_metering_cost_lanes{state="blocked_on_processing_conflict"}`:    0,
		`oceanway_metering_scrape_ok`:                                             1,
	}
}

func with(base map[string]float64, set map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range set {
		out[k] = v
	}
	return out
}

// OBS-1, OBS-2 (issue 36): an active eligibility Work whose attempt
// recorded a Blocked fact (a local deterministic conflict) counts in
// oceanway_metering_blocked_work{lane="eligibility_and_settlement_input"}
// until it finishes; the current settlement input of a pending usage
// dimension counts as awaiting evidence until a newer version replaces it
// as Current (the superseded version is not counted), and one of an
// unavailable usage dimension as needing reconciliation.
func TestCollectorBlockedEligibilityWorkAndSettlementInputs(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	c := metering.NewCollector(b.pool, 5*time.Second)
	require.Equal(t, meteringZero(), meteringSeries(t, c))

	p := processor(t, b, nil)
	a := newAttempt(36)
	dispatched(t, b, a)
	require.Equal(t, meteringZero(), meteringSeries(t, c), "active Work without a Blocked fact is not blocked")
	b.owners.mu.Lock()
	var fact *contract.ExecutionEligibilityFact
	for _, f := range b.owners.facts {
		fact = f
	}
	fact.Disposition = contract.DispositionNotDispatched // the owner's fact differs: blocked
	b.owners.mu.Unlock()
	out, err := p.Process(t.Context(), claimEligibility(t, b, 0))
	require.NoError(t, err)
	require.NotNil(t, out.Blocked)
	require.Equal(t, with(meteringZero(), map[string]float64{
		`oceanway_metering_blocked_work{lane="eligibility_and_settlement_input"}`: 1,
	}), meteringSeries(t, c))

	b.owners.mu.Lock()
	fact.Disposition = contract.DispositionDispatched
	b.owners.mu.Unlock()
	out, err = p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)
	require.Equal(t, with(meteringZero(), map[string]float64{
		`oceanway_metering_settlement_inputs_awaiting_evidence`: 1, // text.input_tokens is pending
	}), meteringSeries(t, c), "the finished Work no longer counts as blocked")

	b.ack(t, a.availability(b.owners, usage, dimIn, 2, contract.AvailabilityAvailable, ""))
	out, err = p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)
	require.Equal(t, meteringZero(), meteringSeries(t, c), "version 2 is Current: nothing awaits evidence")

	// A dispatched attempt whose usage is unavailable: its current
	// settlement input needs reconciliation.
	u := newAttempt(37)
	b.ack(t, u.availability(b.owners, usage, dimOut, 1, contract.AvailabilityUnavailable, ""))
	b.ack(t, u.availability(b.owners, usage, dimIn, 1, contract.AvailabilityAvailable, ""))
	b.ack(t, u.eligibility(b.owners, contract.DispositionDispatched))
	out, err = p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)
	require.Equal(t, with(meteringZero(), map[string]float64{
		`oceanway_metering_settlement_inputs_reconciliation_required`: 1,
	}), meteringSeries(t, c))
}

// OBS-1, OBS-2 (issue 36): provider cost lanes count by state —
// waiting_for_evidence (pending availability), reconciliation_required
// (conflicting), blocked_on_processing_conflict (no cost mapping) — and the
// blocked cost Work counts in blocked_work{lane="provider_cost"}; once the
// blocked Work succeeds neither counts.
func TestCollectorCostLanesAndBlockedCostWork(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := metering.NewCollector(b.pool, 5*time.Second)
	waiting, conflicting, unmapped := newAttempt(361), newAttempt(362), newAttempt(363)
	reads := newCostReads(b.owners, waiting, conflicting, unmapped)
	for _, s := range []struct {
		a     attemptFixture
		state string
		cfg   metering.CostConfig
		want  string
	}{
		{waiting, contract.AvailabilityPending, metering.CostConfig{Reads: reads}, receipt.StateWaitingForEvidence},
		{conflicting, contract.AvailabilityConflicting, metering.CostConfig{Reads: reads}, receipt.StateReconciliationRequired},
		{unmapped, contract.AvailabilityAvailable, metering.CostConfig{Reads: reads, Mappings: map[string]metering.CostUnit{}},
			receipt.StateBlockedOnProcessingConflict},
	} {
		b.ack(t, s.a.availability(b.owners, cost, costDim, 2, s.state, ""))
		res, err := metering.ProcessCostWork(t.Context(), b.pool, s.cfg, claimOne(t, b, time.Hour))
		require.NoError(t, err)
		require.Equal(t, s.want, res.State)
	}
	require.Equal(t, with(meteringZero(), map[string]float64{
		`oceanway_metering_cost_lanes{state="waiting_for_evidence"}`:           1,
		`oceanway_metering_cost_lanes{state="reconciliation_required"}`:        1,
		`oceanway_metering_cost_lanes{state="blocked_on_processing_conflict"}`: 1,
		`oceanway_metering_blocked_work{lane="provider_cost"}`:                 1,
	}), meteringSeries(t, c))

	res, err := metering.ProcessCostWork(t.Context(), b.pool, metering.CostConfig{Reads: reads}, claimOne(t, b, time.Hour))
	require.NoError(t, err)
	require.Equal(t, receipt.StateAvailabilityProcessed, res.State)
	require.Equal(t, with(meteringZero(), map[string]float64{
		`oceanway_metering_cost_lanes{state="waiting_for_evidence"}`:    1,
		`oceanway_metering_cost_lanes{state="reconciliation_required"}`: 1,
	}), meteringSeries(t, c))
}

// OBS-1 (issue 36): the settlement input and cost lane statements read the
// partial indexes of migration 00017 (sequential scans disabled, as the
// hot-statement checks do): a scrape costs what needs attention, not the
// settled history.
func TestMetricsStatementsUsePartialIndexes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for file, index := range map[string]string{
		"sql/metrics_settlement_inputs.sql": "settlement_input_snapshots_unsettleable",
		"sql/metrics_cost_lanes.sql":        "cost_lane_coordination_attention",
	} {
		dbtest.RequireStatementUsesIndex(t, b.pool, file, index)
	}
}
