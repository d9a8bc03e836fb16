package gateway_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/gateway"
)

// notAvailable scrapes the Gateway's collector: the not-available gauge by
// "evidence_kind/state", and scrape_ok.
func notAvailable(t *testing.T, c prometheus.Collector) (map[string]float64, float64) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out, ok := map[string]float64{}, -1.0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "oceanway_gateway_scrape_ok":
				ok = m.GetGauge().GetValue()
			case "oceanway_gateway_availability_not_available":
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				require.Len(t, labels, 2, "OBS-2: evidence kind and state only, never an id")
				out[labels["evidence_kind"]+"/"+labels["state"]] = m.GetGauge().GetValue()
			}
		}
	}
	return out, ok
}

// OBS-1 (issue 36): the Gateway exports the provider evidence it still
// waits for — chains whose Current availability is not available — by
// evidence kind and state, counting only the Current snapshot of each chain:
// every kind × state series exists at 0 first; a pending usage chain counts
// under pending and leaves it once the evidence becomes available; a
// conflicting one counts under conflicting; a not-reported cost chain under
// provider_cost.
func TestCollectorCountsCurrentEvidenceNotAvailable(t *testing.T) {
	t.Parallel()
	pool, svc := setup(t)
	ctx := t.Context()
	c := gateway.NewCollector(pool, 5*time.Second)
	got, ok := notAvailable(t, c)
	require.Equal(t, 1.0, ok)
	require.Len(t, got, 8, "2 evidence kinds × 4 states exported from the start")
	for k, v := range got {
		require.Zero(t, v, k)
	}

	m, body := manifest(t)
	_, err := svc.Dispatch(ctx, gateway.DispatchRequest{Tenant: tenant, ManifestBody: body, Decision: gateway.Decision{Route: route("channel/eu")}})
	require.NoError(t, err)
	id := m.ExecutionAttemptID
	usage := func(key, state, qty, report string) gateway.Observation {
		return gateway.Observation{EvidenceKind: contract.EvidenceProviderUsage, DimensionKey: key, State: state,
			ReasonCode: "provider_" + state, Quantity: qty, ReportID: report}
	}
	observe(t, svc, id, usage("text.input_tokens", contract.AvailabilityPending, "", ""))
	observe(t, svc, id, usage("text.output_tokens", contract.AvailabilityConflicting, "", ""))
	observe(t, svc, id, gateway.Observation{EvidenceKind: contract.EvidenceProviderCost, DimensionKey: "cost.usd",
		State: contract.AvailabilityNotReported, ReasonCode: "provider_silent"})
	got, _ = notAvailable(t, c)
	require.Equal(t, 1.0, got["provider_usage/pending"])
	require.Equal(t, 1.0, got["provider_usage/conflicting"])
	require.Equal(t, 1.0, got["provider_cost/not_reported"])

	observe(t, svc, id, usage("text.input_tokens", contract.AvailabilityAvailable, "1200", "r1"))
	got, _ = notAvailable(t, c)
	require.Zero(t, got["provider_usage/pending"], "the chain's Current is available: its pending v1 no longer counts")
	require.Equal(t, 1.0, got["provider_usage/conflicting"])
}

// OBS-1 (issue 36): the statement reads the partial index of migration
// 00007, off the history of available evidence.
func TestMetricsStatementUsesPartialIndex(t *testing.T) {
	t.Parallel()
	pool, _ := setup(t)
	dbtest.RequireStatementUsesIndex(t, pool, "sql/metrics_availability.sql", "availability_snapshots_not_available")
}
