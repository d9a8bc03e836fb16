package projector_test

import (
	"testing"

	"github.com/oceanway/core/internal/dbtest"
)

// OPS-1 (issue 35): the projector's lookups of an operation summary by run or
// by reservation are probes of the key that leads with that identifier, in
// the generic plan a pooled session keeps, made on a fresh, never-analyzed
// table. With keys led by the projection name and version (every row's
// prefix), such a plan read the reservation key's whole prefix for a lookup
// by run: about 400 buffers per call at 1,000 runs, growing with history.
func TestOPS1SummaryLookupsProbeTheirKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	byRun := map[string]string{"operation_summaries_pkey": "run_id"}
	for file, probes := range map[string]map[string]string{
		"queries/summary_finalize.sql":         byRun,
		"queries/summary_link_reservation.sql": byRun,
		"queries/summary_by_link.sql": {
			"operation_summaries_pkey":            "run_id",
			"operation_summaries_reservation_key": "billing_reservation_id",
		},
	} {
		dbtest.RequireGenericPlanProbes(t, b.pool, file, probes)
	}
}
