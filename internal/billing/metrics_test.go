package billing_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/dbtest"
)

// gauges gathers reg and returns each series' value by name and labels
// (name{k="v",...} in label-name order).
func gauges(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			out[seriesKey(mf.GetName(), m)] = value(m)
		}
	}
	return out
}

func seriesKey(name string, m *dto.Metric) string {
	if len(m.GetLabel()) == 0 {
		return name
	}
	var ls []string
	for _, l := range m.GetLabel() {
		ls = append(ls, l.GetName()+"="+`"`+l.GetValue()+`"`)
	}
	return name + "{" + strings.Join(ls, ",") + "}"
}

func value(m *dto.Metric) float64 {
	switch {
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	}
	return 0
}

// OBS-1, OBS-2 (issue 36): Billing's scrape-time collector, read as the
// billing role, counts the unfinished finalization fences by state and
// visible waiting reason — a fence waiting after a reconciliation_deferred
// evaluation is labelled with its reason code — leaves committed fences
// out, exports the bounded always-zero series (pending_evaluation and
// reconciliation_required with no reason, both catch-up states, the
// exposures) and reports each state's oldest age. The labels are states and
// reason codes, never an id.
func TestCollectorCountsUnfinishedFencesByStateAndReason(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(billing.NewCollector(b.pool, 5*time.Second))

	// Nothing open yet: every bounded series exists at 0.
	require.Equal(t, map[string]float64{
		`oceanway_billing_fences{state="pending_evaluation",waiting_reason=""}`:                        0,
		`oceanway_billing_fences{state="reconciliation_required",waiting_reason=""}`:                   0,
		`oceanway_billing_fence_oldest_age_seconds{state="pending_evaluation",waiting_reason=""}`:      0,
		`oceanway_billing_fence_oldest_age_seconds{state="reconciliation_required",waiting_reason=""}`: 0,
		`oceanway_billing_catch_up_fences{state="pending_verification"}`:                               0,
		`oceanway_billing_catch_up_fences{state="blocked_on_owner_conflict"}`:                          0,
		`oceanway_billing_late_exposures_open`:                                                         0,
		`oceanway_billing_late_exposures_open_amount`:                                                  0,
		`oceanway_billing_late_exposure_oldest_open_age_seconds`:                                       0,
		`oceanway_billing_scrape_ok`:                                                                   1,
	}, gauges(t, reg))

	// r1 admitted, r2 closed: both pending evaluation. r3 closed and its
	// evaluation deferred for reconciliation: awaiting finalization with
	// the reason. r4 committed: not counted.
	admit(t, b.admin, newRun(1))
	b.closed(t, newRun(2))
	r3 := newRun(3)
	b.closed(t, r3)
	d := b.decision(t, r3, billingc.SuccessReleaseAll, "0", "2500")
	_, err := tx(t, b.pool, func(ctx context.Context, tx pgx.Tx) (billing.EvaluationResult, error) {
		return billing.RecordEvaluationTx(ctx, tx, billing.Evaluation{FenceID: r3.fenceID, WorkGeneration: d.WorkGeneration,
			OperationID: d.OperationID, Outcome: billing.EvaluationReconciliationDeferred, ReasonCode: "target_above_reservation",
			ReasonDetail: "target 3000 credits above reservation 2500", DecisionObject: &d.DecisionObject})
	})
	require.NoError(t, err)
	r4 := newRun(4)
	b.closed(t, r4)
	_, err = b.commit(t, b.decision(t, r4, billingc.SuccessReleaseAll, "0", "2500"), billing.CommitOpts{})
	require.NoError(t, err)

	const deferred = `state="awaiting_finalization",waiting_reason="reconciliation_deferred:target_above_reservation"`
	before := time.Now()
	got := gauges(t, reg)
	// Ages: the pending fences last moved when admitted (the fixtures'
	// occurred time); the deferred one just now.
	pendingAge := got[`oceanway_billing_fence_oldest_age_seconds{state="pending_evaluation",waiting_reason=""}`]
	require.InDelta(t, before.Sub(occurred).Seconds(), pendingAge, 60, "oldest pending fence's age")
	deferredAge := got[`oceanway_billing_fence_oldest_age_seconds{`+deferred+`}`]
	require.Greater(t, deferredAge, 0.0)
	require.Less(t, deferredAge, 60.0)
	delete(got, `oceanway_billing_fence_oldest_age_seconds{state="pending_evaluation",waiting_reason=""}`)
	delete(got, `oceanway_billing_fence_oldest_age_seconds{`+deferred+`}`)
	require.Equal(t, map[string]float64{
		`oceanway_billing_fences{` + deferred + `}`:                                                    1,
		`oceanway_billing_fences{state="pending_evaluation",waiting_reason=""}`:                        2,
		`oceanway_billing_fences{state="reconciliation_required",waiting_reason=""}`:                   0,
		`oceanway_billing_fence_oldest_age_seconds{state="reconciliation_required",waiting_reason=""}`: 0,
		`oceanway_billing_catch_up_fences{state="pending_verification"}`:                               0,
		`oceanway_billing_catch_up_fences{state="blocked_on_owner_conflict"}`:                          0,
		`oceanway_billing_late_exposures_open`:                                                         0,
		`oceanway_billing_late_exposures_open_amount`:                                                  0,
		`oceanway_billing_late_exposure_oldest_open_age_seconds`:                                       0,
		`oceanway_billing_scrape_ok`:                                                                   1,
	}, got)
}

// OBS-1 (issue 36): the decision and transition counters exist from
// start-up, every decision and every kind at 0, count what is committed,
// and a nil *Counters (tests, one-off workers) counts nothing without
// panicking.
func TestCountersExportEveryLabelFromStartUp(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	c := billing.NewCounters(reg)
	zero := map[string]float64{
		`oceanway_billing_finalization_decisions_total{decision="settle_and_release_remainder"}`: 0,
		`oceanway_billing_finalization_decisions_total{decision="release_all"}`:                  0,
		`oceanway_billing_finalization_decisions_total{decision="blocked"}`:                      0,
		`oceanway_billing_finalization_decisions_total{decision="reconciliation_required"}`:      0,
		`oceanway_billing_settlement_transitions_total{kind="refund"}`:                           0,
		`oceanway_billing_settlement_transitions_total{kind="adjustment"}`:                       0,
		`oceanway_billing_settlement_transitions_total{kind="late_settlement_exposure"}`:         0,
	}
	require.Equal(t, zero, gauges(t, reg))

	c.DecisionCommitted(billingc.DecisionBlocked)
	c.DecisionCommitted(billingc.DecisionBlocked)
	c.DecisionCommitted(billingc.DecisionReleaseAll)
	c.TransitionCommitted(billingc.TransitionLateSettlementExposure)
	want := map[string]float64{}
	for k, v := range zero {
		want[k] = v
	}
	want[`oceanway_billing_finalization_decisions_total{decision="blocked"}`] = 2
	want[`oceanway_billing_finalization_decisions_total{decision="release_all"}`] = 1
	want[`oceanway_billing_settlement_transitions_total{kind="late_settlement_exposure"}`] = 1
	require.Equal(t, want, gauges(t, reg))

	var none *billing.Counters
	require.NotPanics(t, func() {
		none.DecisionCommitted(billingc.DecisionReleaseAll)
		none.TransitionCommitted(billingc.TransitionRefund)
	})
}

// OBS-1 (issue 36): the collector's statements read only the open items,
// through the partial indexes of migrations 00043 and 00049 (checked with sequential
// scans disabled, as the hot statements are): a scrape costs the open
// fences and exposures, not the committed history.
func TestMetricsStatementsUsePartialIndexes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := newRun(1)
	b.closed(t, r)
	for file, index := range map[string]string{
		"sql/metrics_fences.sql":          "billing_finalization_fences_unfinished",
		"sql/metrics_catch_up_fences.sql": "settlement_catch_up_fences_unsettled",
		"sql/metrics_exposures.sql":       "late_settlement_cases_unresolved",
	} {
		dbtest.RequireStatementUsesIndex(t, b.admin, file, index)
	}
}
