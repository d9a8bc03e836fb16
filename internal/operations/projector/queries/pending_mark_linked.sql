-- name: PendingMarkLinked :exec
-- The Run event linked a Wallet-first reservation; the row stays as audit.
UPDATE operations.pending_unlinked_reservations
   SET status = 'linked', linked_at = @now::timestamptz, linked_by_event_id = @linked_by_event_id::uuid
 WHERE projection_name = @projection_name AND projection_version = @projection_version
   AND billing_reservation_id = @billing_reservation_id AND status = 'pending';
