package catchup_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/catchup"
)

// series gathers reg into name{k="v",...} → value.
func series(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
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
			out[key] = metricValue(m)
		}
	}
	return out
}

func metricValue(m *dto.Metric) float64 {
	if m.GetCounter() != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

// OBS-1, OBS-2 (issue 36): on the catch-up fences and exposures a real
// worker writes, Billing's scrape-time collector (read as the billing
// role) reports the catch-up fences not caught up by state — pending
// verification before the worker runs, blocked_on_owner_conflict after —
// and the open late settlement exposures with their count, amount and the
// oldest one's age; the worker's Counters count each committed transition
// by kind (the exposures), the other kinds staying at 0.
func TestCollectorReportsCatchUpFencesAndOpenExposures(t *testing.T) {
	t.Parallel()
	b := setupCatchUp(t)
	exposed1, exposed2, conflicted, level := catchUpDimension(1), catchUpDimension(2), catchUpDimension(3), catchUpDimension(4)
	b.metering.append(exposed1, 1, "100")
	b.metering.append(exposed1, 2, "130") // +30 after release: exposure
	b.metering.append(exposed2, 1, "100")
	b.metering.append(exposed2, 2, "150") // +50: exposure
	b.metering.append(conflicted, 1, "100")
	v2 := b.metering.append(conflicted, 2, "70")
	b.metering.mu.Lock()
	b.metering.conflicts[v2] = cquad("sicf-owner-conflict")
	b.metering.mu.Unlock()
	b.metering.append(level, 1, "100") // nothing to catch up
	for _, d := range []billingc.SettlementDimension{exposed1, exposed2, conflicted, level} {
		b.finalize(t, "100", d)
	}

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(billing.NewCollector(b.pool, 5*time.Second))
	counters := billing.NewCounters(reg)
	got := series(t, reg)
	require.Equal(t, 4.0, got[`oceanway_billing_catch_up_fences{state="pending_verification"}`])
	require.Equal(t, 0.0, got[`oceanway_billing_catch_up_fences{state="blocked_on_owner_conflict"}`])
	require.Equal(t, 0.0, got[`oceanway_billing_late_exposures_open`])
	require.Equal(t, 0.0, got[`oceanway_billing_late_exposures_open_amount`])
	require.Equal(t, 0.0, got[`oceanway_billing_settlement_transitions_total{kind="late_settlement_exposure"}`])
	require.Equal(t, 1.0, got[`oceanway_billing_scrape_ok`])

	recorded := catchUpAt.Add(time.Hour)
	w, err := catchup.NewWorker(b.pool, catchup.WorkerConfig{Metering: b.metering, Ledger: b.ledger, Counters: counters,
		BlockedBackoff: time.Hour, Now: func() time.Time { return recorded }})
	require.NoError(t, err)
	for i := 0; ; i++ {
		require.Less(t, i, 20, "catch-up did not settle")
		steps, err := w.RunOnce(t.Context())
		require.NoError(t, err)
		if len(steps) == 0 {
			break
		}
	}
	require.Equal(t, billingc.CatchUpBlockedOnOwnerConflict, b.fence(t, conflicted).State)

	before := time.Now()
	got = series(t, reg)
	age := got[`oceanway_billing_late_exposure_oldest_open_age_seconds`]
	require.InDelta(t, before.Sub(recorded).Seconds(), age, 60, "oldest open exposure recorded at the worker's clock")
	delete(got, `oceanway_billing_late_exposure_oldest_open_age_seconds`)
	for k := range got {
		if strings.HasPrefix(k, "oceanway_billing_fence") { // no finalization fence in this database
			require.Zero(t, got[k], k)
			delete(got, k)
		}
	}
	require.Equal(t, map[string]float64{
		`oceanway_billing_catch_up_fences{state="pending_verification"}`:                         0,
		`oceanway_billing_catch_up_fences{state="blocked_on_owner_conflict"}`:                    1,
		`oceanway_billing_late_exposures_open`:                                                   2,
		`oceanway_billing_late_exposures_open_amount`:                                            80,
		`oceanway_billing_settlement_transitions_total{kind="late_settlement_exposure"}`:         2,
		`oceanway_billing_settlement_transitions_total{kind="refund"}`:                           0,
		`oceanway_billing_settlement_transitions_total{kind="adjustment"}`:                       0,
		`oceanway_billing_finalization_decisions_total{decision="settle_and_release_remainder"}`: 0,
		`oceanway_billing_finalization_decisions_total{decision="release_all"}`:                  0,
		`oceanway_billing_finalization_decisions_total{decision="blocked"}`:                      0,
		`oceanway_billing_finalization_decisions_total{decision="reconciliation_required"}`:      0,
		`oceanway_billing_scrape_ok`:                                                             1,
	}, got)
	// The collector agrees with the owner's own read of the exposures.
	n, sum, err := catchup.OpenExposures(t.Context(), b.pool)
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	require.Equal(t, "80", sum)
}
