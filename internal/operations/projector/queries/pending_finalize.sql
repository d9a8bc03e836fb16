-- name: PendingFinalize :execrows
-- Records the Billing finalization of a reservation still waiting for its Run.
UPDATE operations.pending_unlinked_reservations
   SET finalization_event_id = @finalization_event_id, finalization_occurred_at = @finalization_occurred_at,
       billing_finalization_decision = @billing_finalization_decision,
       settled_amount = @settled_amount, released_amount = @released_amount
 WHERE projection_name = @projection_name AND projection_version = @projection_version
   AND billing_reservation_id = @billing_reservation_id AND status = 'pending'
   AND finalization_event_id IS NULL;
