package projector_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/internal/operations/operationstest"
	"github.com/oceanway/core/internal/operations/projector"
)

// TestGuardGoSecondWaitingReservationForRun (OPS-3): a Run whose
// Wallet-first reservation already waits in pending_unlinked_reservations
// does not get a second waiting reservation: the second wallet event (its
// own reservation aggregate, so no revision or key refuses it) is
// non_retryable link_conflict and writes nothing.
// Clause: OPS-3.second-waiting-reservation.
func TestGuardGoSecondWaitingReservationForRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	o := operationstest.Sample(41)
	b.ack(t, o.Wallet)
	before := b.state(t)
	other := operationstest.ID(41, 33)
	second := operationstest.Rebuild(o.Wallet, func(e *envelope.Envelope) {
		e.EventID = operationstest.ID(41, 34)
		e.AggregateID = other
		e.Payload["billingReservationId"] = other
	})
	_, err := b.deliver(t, second)
	requireCode(t, err, false, projector.CodeLinkConflict) // OPS-3.second-waiting-reservation
	require.ErrorIs(t, err, projector.ErrLinkConflict)
	require.ErrorContains(t, err, "already has waiting reservation")
	require.Equal(t, before, b.state(t), "nothing written")
}

// TestGuardGoFinalizationMismatch (OPS-3): a billing.finalization.committed@1
// whose amounts do not add up to the projected reservation, or whose
// account differs, is non_retryable finalization_conflict and writes
// nothing, whether the reservation is linked to its Run's summary or still
// waits for its Run (the owner read answers found: the projector's own
// equality check is the refusal).
// Clause: OPS-3.finalization-mismatch.
func TestGuardGoFinalizationMismatch(t *testing.T) {
	t.Parallel()
	for name, edit := range map[string]func(*envelope.Envelope){
		"amounts": func(e *envelope.Envelope) { e.Payload["settledAmount"], e.Payload["releasedAmount"] = "1000", "1" },
		"account": func(e *envelope.Envelope) { e.Payload["billingAccountId"] = operationstest.ID(42, 99) },
	} {
		for _, linked := range []bool{true, false} {
			t.Run(name+map[bool]string{true: "/linked", false: "/waiting"}[linked], func(t *testing.T) {
				t.Parallel()
				b := setup(t)
				o := operationstest.Sample(42)
				if linked {
					b.ack(t, o.Run)
				}
				b.ack(t, o.Wallet)
				before := b.state(t)
				_, err := b.deliver(t, operationstest.Rebuild(o.Finalization, edit))
				requireCode(t, err, false, projector.CodeFinalizationConflict) // OPS-3.finalization-mismatch
				require.ErrorIs(t, err, projector.ErrFinalizationConflict)
				require.Equal(t, before, b.state(t), "nothing written")
				b.ack(t, o.Finalization) // the matching finalization applies
			})
		}
	}
}
