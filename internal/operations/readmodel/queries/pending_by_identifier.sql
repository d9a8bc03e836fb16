-- name: PendingByIdentifier :many
-- Wallet-first reservations an exact identifier names (reservation id, run
-- id, wallet or finalization event id, correlation or operation id).
SELECT sqlc.embed(p)
  FROM operations.pending_unlinked_reservations p
 WHERE p.projection_name = @projection_name AND p.projection_version = @projection_version AND p.status = 'pending'
   AND @identifier::uuid IN (p.billing_reservation_id, p.run_id, p.wallet_event_id, p.finalization_event_id,
                             p.correlation_id, p.operation_id)
 ORDER BY p.billing_reservation_id;
