-- name: DeliveryRecoverExpired :many
-- Lease-expiry recovery (OB-CLAIM-3): for leased deliveries whose lease has
-- expired and whose current attempt has no finish, append
-- outcome=lease_expired_unknown and return the delivery to pending in the
-- same statement. Updating the row (not only locking it) matters: a late
-- fenced writer blocked on the row re-checks its WHERE against the new
-- version (status is no longer leased) and matches nothing; the finish
-- primary key forbids a second finish regardless.
-- now() (stable), not clock_timestamp() (volatile), so the expiry bound is an
-- index condition on outbox_deliveries_claim_leased instead of a filter over
-- every leased row. lease_owner IS NOT NULL (true of every leased row) is the
-- index's predicate (00007), which no fenced write states.
-- since (NULL = no lower bound) bounds the scan from below: the index keeps an
-- entry for every lease that ever ended (acknowledged, retried, quarantined)
-- until vacuum removes it, keyed by its old expiry, so an unbounded scan walks
-- the whole acknowledged history since the last vacuum. The dispatcher passes
-- the time of its last complete scan (minus a margin) and runs an unbounded
-- scan only periodically (Dispatcher.recover). The answer always has one row:
-- scanned_at is this scan's now(); destination is '' when nothing expired.
WITH expired AS (
  SELECT d.event_id, d.destination, d.current_attempt_id
  FROM outbox.outbox_deliveries d
  WHERE d.status = 'leased' AND d.lease_owner IS NOT NULL AND d.lease_expires_at <= now()
    AND d.lease_expires_at > COALESCE(sqlc.narg(since)::timestamptz, '-infinity'::timestamptz)
    AND d.destination = ANY(sqlc.arg(destinations)::text[])
  ORDER BY d.lease_expires_at
  LIMIT sqlc.arg(batch_limit)
  FOR UPDATE SKIP LOCKED
), released AS (
  UPDATE outbox.outbox_deliveries d
  SET status = 'pending', available_at = now(), lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL,
      last_error_code = 'lease_expired'
  FROM expired e
  WHERE d.event_id = e.event_id AND d.destination = e.destination
  RETURNING d.destination, d.current_attempt_id
), finished AS (
  INSERT INTO outbox.outbox_delivery_attempt_finishes (attempt_id, finished_at, outcome, retry_disposition, normalized_error_code)
  SELECT current_attempt_id, now(), 'lease_expired_unknown', 'reclaimable', 'lease_expired' FROM released
  RETURNING attempt_id
), counted AS (
  SELECT r.destination, count(*) AS recovered FROM finished f JOIN released r ON r.current_attempt_id = f.attempt_id
  GROUP BY r.destination
)
SELECT now()::timestamptz AS scanned_at, COALESCE(c.destination, '')::text AS destination, COALESCE(c.recovered, 0)::bigint AS recovered
FROM (SELECT 1) AS one LEFT JOIN counted c ON true;
