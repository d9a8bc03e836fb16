-- name: ReservationBillingState
-- The reservation's billing state and its finalization fence (primary keys).
SELECT r.state, r.reserved_amount::text AS reserved_amount, r.settled_amount::text AS settled_amount,
       r.released_amount::text AS released_amount, r.committed_ref, r.finalized_at,
       f.coordination_state, f.waiting_reason, f.finalization_fence_revision
  FROM billing.reservation_states r
  LEFT JOIN billing.billing_finalization_fences f ON f.billing_reservation_id = r.billing_reservation_id
 WHERE r.billing_reservation_id = @reservation_id;
