-- name: DeliveryOpenCount :many
-- Counts non-terminal deliveries per destination and status and the age of
-- the oldest one (OBS-1). One branch per status, each read through its
-- partial index (a leased delivery always has its lease owner,
-- outbox_deliveries_leased_has_lease): an IN over both statuses is a
-- sequential scan of the whole history.
SELECT destination, status, count(*) AS open_count,
  COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - min(created_at)), 0)::float8 AS oldest_age_seconds
FROM outbox.outbox_deliveries
WHERE status = 'pending'
GROUP BY destination, status
UNION ALL
SELECT destination, status, count(*) AS open_count,
  COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - min(created_at)), 0)::float8 AS oldest_age_seconds
FROM outbox.outbox_deliveries
WHERE status = 'leased' AND lease_owner IS NOT NULL
GROUP BY destination, status;
