package catchup

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/internal/billing"
)

// ErrTransitionNotPostable: a transition the ledger refuses to post
// automatically (an adjustment needs a funding decision; the reservation is
// not finalized).
var ErrTransitionNotPostable = errors.New("billing: settlement transition cannot be posted automatically")

// TransitionPostings is the Ledger over the reservation's ledger: a
// refund moves the amount back from settled revenue to the customer's
// wallet (debit settled_revenue, credit customer_wallet), one balanced group
// per transition on the reservation's economic identity. The ledger's
// guards keep every balance non-negative, so a refund can never take back
// more than was settled. Adjustments are refused (reconcile_before_charge:
// they need a funding decision the first phase does not have); exposures
// never reach the ledger.
type TransitionPostings struct{}

var _ Ledger = TransitionPostings{}

// PostSettlementTransitionTx implements Ledger.
func (TransitionPostings) PostSettlementTransitionTx(ctx context.Context, tx pgx.Tx, t *billingc.BillingSettlementTransition) error {
	// guard BI-2.refund-only
	if t.TransitionKind != billingc.TransitionRefund {
		return fmt.Errorf("%w: %s", ErrTransitionNotPostable, t.TransitionKind)
	}
	d := t.Dimension
	var state string
	if err := tx.QueryRow(ctx, qCatchUpReservationState, pgx.NamedArgs{"billing_reservation_id": d.BillingReservationID}).Scan(&state); err != nil {
		return fmt.Errorf("read reservation %s: %w", d.BillingReservationID, err)
	}
	// guard BI-2.reservation-settled
	if state != billingc.ReservationSettled {
		return fmt.Errorf("%w: reservation %s is %s", ErrTransitionNotPostable, d.BillingReservationID, state)
	}
	return billing.PostSettlementTransitionTx(ctx, tx, t.Transition.Ref)
}
