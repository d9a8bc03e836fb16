package readmodel_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/operations/readmodel"
)

// gauge returns the value of the single series of a gauge family.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name {
			require.Len(t, f.GetMetric(), 1)
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("metric %s not gathered", name)
	return 0
}

// OBS-1: the receipt anti-join and gap gauges follow the read model — two
// admissions not yet delivered are four missing receipts; after delivery, none.
func TestCollector_OBS1_ReceiptAntiJoinFollowsDeliveries(t *testing.T) {
	t.Parallel()
	b := setup(t, 4)
	reg := prometheus.NewRegistry()
	reg.MustRegister(readmodel.NewCollector(b.rm, 5*time.Second))
	b.admit(t, 2)
	require.Equal(t, 1.0, gauge(t, reg, "oceanway_operations_scrape_ok"))
	require.Equal(t, 4.0, gauge(t, reg, "oceanway_operations_missing_receipts"))
	require.Equal(t, 0.0, gauge(t, reg, "oceanway_operations_unresolved_revision_gaps"))
	b.deliverAll(t)
	require.Equal(t, 0.0, gauge(t, reg, "oceanway_operations_missing_receipts"))
	require.Equal(t, 0.0, gauge(t, reg, "oceanway_operations_pending_unlinked_reservations"))
}

// issue 36, OBS-1 / OPS-4: the completeness gauge an alert watches is 1
// only while the latest proof is verified_current: 0 without a proof, 1
// once a proof is recorded over unchanged inputs, 0 again when new events
// make it stale.
func TestCollector_CompletenessVerifiedCurrentFollowsTheProof(t *testing.T) {
	t.Parallel()
	b := setup(t, 4)
	reg := prometheus.NewRegistry()
	reg.MustRegister(readmodel.NewCollector(b.rm, 5*time.Second))
	const name = "oceanway_operations_completeness_verified_current"
	require.Equal(t, 0.0, gauge(t, reg, name), "no proof yet: unverified")
	b.admit(t, 1)
	b.deliverAll(t)
	_, recorded, err := b.rm.RecordCompleteness(t.Context(), readmodel.Params{})
	require.NoError(t, err)
	require.True(t, recorded)
	require.Equal(t, 1.0, gauge(t, reg, name), "proof over unchanged inputs")
	b.admit(t, 1)
	require.Equal(t, 0.0, gauge(t, reg, name), "new source events: the proof is stale")
}
