package billing_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/billing"
)

// TestGuardGoSettlementRunOfAnotherReservation (BFC-6): a settlement input
// that names a run of another reservation is ErrSettlementConflict, as the
// billing role, and writes no watermark: the watermark is keyed by the
// input's reservation, which no database guard ties to the run's fence.
// Clause: BFC-6.run-reservation-mismatch.
func TestGuardGoSettlementRunOfAnotherReservation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r, other := newRun(1), newRun(2)
	admit(t, b.admin, r)
	admit(t, b.admin, other)
	in := r.settlement(1, 1, "")
	in.BillingReservationID = other.reservationID
	_, err := b.settle(t, in)
	require.ErrorIs(t, err, billing.ErrSettlementConflict) // BFC-6.run-reservation-mismatch
	require.ErrorContains(t, err, "belongs to reservation")
	var n int
	require.NoError(t, b.admin.QueryRow(t.Context(), "SELECT count(*) FROM billing.settlement_input_watermarks").Scan(&n))
	require.Zero(t, n, "no watermark is written")
}
