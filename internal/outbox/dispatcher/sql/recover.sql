-- Lease-expiry recovery (OB-CLAIM-3): for leased deliveries whose lease has
-- expired and whose current attempt has no finish, append
-- outcome=lease_expired_unknown. The row lock (FOR UPDATE SKIP LOCKED) and
-- the opposite lease condition of fenced writes keep a live holder and the
-- recoverer apart; the finish primary key forbids a second finish anyway.
-- $1 destinations, $2 limit.
WITH expired AS (
  SELECT d.event_id, d.destination, d.current_attempt_id
  FROM outbox.outbox_deliveries d
  WHERE d.status = 'leased' AND d.lease_expires_at <= clock_timestamp() AND d.destination = ANY($1::text[])
    AND NOT EXISTS (SELECT 1 FROM outbox.outbox_delivery_attempt_finishes f WHERE f.attempt_id = d.current_attempt_id)
  ORDER BY d.lease_expires_at
  LIMIT $2
  FOR UPDATE SKIP LOCKED
), finished AS (
  INSERT INTO outbox.outbox_delivery_attempt_finishes (attempt_id, finished_at, outcome, retry_disposition, normalized_error_code)
  SELECT current_attempt_id, now(), 'lease_expired_unknown', 'reclaimable', 'lease_expired' FROM expired
  ON CONFLICT (attempt_id) DO NOTHING
  RETURNING attempt_id
)
SELECT e.destination, count(*) FROM finished f JOIN expired e ON e.current_attempt_id = f.attempt_id
GROUP BY e.destination
