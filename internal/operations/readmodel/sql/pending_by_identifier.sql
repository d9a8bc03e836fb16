-- name: PendingByIdentifier
-- Wallet-first reservations an exact identifier names (reservation id, run
-- id, wallet or finalization event id, correlation or operation id).
-- $1 projection name, $2 projection version, $3 identifier.
SELECT {{pending_columns}}
  FROM operations.pending_unlinked_reservations p
 WHERE p.projection_name = $1 AND p.projection_version = $2 AND p.status = 'pending'
   AND $3 IN (p.billing_reservation_id, p.run_id, p.wallet_event_id, p.finalization_event_id, p.correlation_id, p.operation_id)
 ORDER BY p.billing_reservation_id
