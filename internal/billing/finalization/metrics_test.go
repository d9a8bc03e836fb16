package finalization_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/finalization"
)

const fencesHeader = `# HELP oceanway_billing_fences Finalization fences not committed, by state and visible waiting reason.
# TYPE oceanway_billing_fences gauge
`

// OBS-1 (issue 36): the running worker counts each decision it commits or
// records by outcome — a success and a reconciliation deferred here — the
// other outcomes staying at 0; the deferred fence then shows in Billing's
// collector under its waiting reason (OBS-2: a reason code, not an id).
func TestWorkerCountsDecisionsByOutcome(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		in, out string
		want    string
	}{
		"success":        {"1200", "333", contract.DecisionSettleAndReleaseRemainder},
		"reconciliation": {"1000000", "200000", contract.DecisionReconciliationRequired}, // above the reservation
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			k := newCore(t)
			w := newWorld(tc.in, tc.out)
			closedWorld(t, k, w)
			reg := prometheus.NewPedanticRegistry()
			counters := billing.NewCounters(reg)
			collector := billing.NewCollector(k.pool, 5*time.Second)
			wk := finalization.NewWorker(k.pool, w.owners(), finalization.BillingLedger{},
				finalization.Config{Concurrency: 1, Idle: 10 * time.Millisecond, Counters: counters}, nil)
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() {
				defer close(done)
				_ = wk.Run(ctx)
			}()
			decided := func(d string) float64 {
				mfs, err := reg.Gather()
				require.NoError(t, err)
				for _, mf := range mfs {
					if mf.GetName() != "oceanway_billing_finalization_decisions_total" {
						continue
					}
					for _, m := range mf.GetMetric() {
						if m.GetLabel()[0].GetValue() == d {
							return m.GetCounter().GetValue()
						}
					}
				}
				t.Fatalf("no series for decision %s", d)
				return 0
			}
			require.Eventually(t, func() bool { return decided(tc.want) == 1 }, 20*time.Second, 20*time.Millisecond)
			cancel()
			<-done
			for _, d := range []string{contract.DecisionSettleAndReleaseRemainder, contract.DecisionReleaseAll,
				contract.DecisionBlocked, contract.DecisionReconciliationRequired} {
				if d != tc.want {
					require.Zero(t, decided(d), d)
				}
			}
			want := fencesHeader + `oceanway_billing_fences{state="pending_evaluation",waiting_reason=""} 0
oceanway_billing_fences{state="reconciliation_required",waiting_reason=""} 0
`
			if tc.want == contract.DecisionReconciliationRequired {
				want += `oceanway_billing_fences{state="awaiting_finalization",waiting_reason="reconciliation_deferred:target_above_reservation"} 1
`
			}
			require.NoError(t, testutil.CollectAndCompare(collector, strings.NewReader(want), "oceanway_billing_fences"))
		})
	}
}
