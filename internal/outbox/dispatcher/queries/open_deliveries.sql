-- name: DeliveryOpenCount :many
-- Counts non-terminal deliveries per destination and status and the age of
-- the oldest one (OBS-1). Both statuses are served by partial indexes.
SELECT destination, status, count(*) AS open_count,
  COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - min(created_at)), 0)::float8 AS oldest_age_seconds
FROM outbox.outbox_deliveries
WHERE status IN ('pending', 'leased')
GROUP BY destination, status;
