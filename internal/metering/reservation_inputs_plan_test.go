package metering_test

import (
	"testing"

	"github.com/oceanway/core/internal/dbtest"
)

// BI-1 (issue 33): getReservationSettlementInputs reads a reservation's
// Current settlement inputs through the reservation's partial index (one
// entry per dimension, never a later version) and probes each dimension's
// pointer and Current snapshot by their keys, in the generic plan a pooled
// session keeps, whatever the statistics: no statement reads more as the
// dimensions' histories or other reservations grow.
func TestBI1ReservationSettlementInputsProbeTheReservationIndex(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dbtest.RequireGenericPlanProbes(t, b.pool, "sql/settlement_reservation_current_select.sql", map[string]string{
		"settlement_input_snapshots_reservation": "billing_reservation_id",
		"settlement_input_current_pkey":          "settlement_dimension_id",
		"settlement_input_snapshots":             "settlement_dimension_id",
	})
}
