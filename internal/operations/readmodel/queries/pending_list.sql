-- name: PendingList :many
-- Every reservation still waiting for its Run event (OPS-3).
SELECT sqlc.embed(p)
  FROM operations.pending_unlinked_reservations p
 WHERE p.projection_name = @projection_name AND p.projection_version = @projection_version AND p.status = 'pending'
 ORDER BY p.received_at, p.billing_reservation_id
 LIMIT @row_limit;
