-- name: PendingMarkLinked
-- The Run event linked a Wallet-first reservation; the row stays as audit.
-- $1 projection name, $2 projection version, $3 reservation id, $4 run event id, $5 now.
UPDATE operations.pending_unlinked_reservations
   SET status = 'linked', linked_at = $5, linked_by_event_id = $4
 WHERE projection_name = $1 AND projection_version = $2 AND billing_reservation_id = $3 AND status = 'pending'
