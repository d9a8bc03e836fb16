-- name: PendingFinalize
-- Records the Billing finalization of a reservation still waiting for its Run.
-- $1 projection name, $2 projection version, $3 reservation id, $4 event id,
-- $5 occurred at, $6 decision, $7 settled, $8 released.
UPDATE operations.pending_unlinked_reservations
   SET finalization_event_id = $4, finalization_occurred_at = $5, billing_finalization_decision = $6,
       settled_amount = $7, released_amount = $8
 WHERE projection_name = $1 AND projection_version = $2 AND billing_reservation_id = $3 AND status = 'pending'
   AND finalization_event_id IS NULL
