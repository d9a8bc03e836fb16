-- name: PendingList
-- Every reservation still waiting for its Run event (OPS-3).
-- $1 projection name, $2 projection version, $3 limit.
SELECT {{pending_columns}}
  FROM operations.pending_unlinked_reservations p
 WHERE p.projection_name = $1 AND p.projection_version = $2 AND p.status = 'pending'
 ORDER BY p.received_at, p.billing_reservation_id
 LIMIT $3
