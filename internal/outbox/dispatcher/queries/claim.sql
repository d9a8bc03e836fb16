-- name: DeliveryClaim :many
-- Claim (OB-CLAIM-1): one statement, one short transaction.
-- Eligible: pending and available. A leased delivery whose lease expired
-- becomes eligible only through recovery (recover.sql), which appends the
-- lease_expired_unknown finish and returns it to pending in one statement.
-- Each destination is an ordered scan of outbox_deliveries_claim_pending
-- that stops at LIMIT; the candidates are merged in claim order. Rows locked
-- but not picked are released at commit.
WITH candidates AS (
  SELECT c.event_id, c.destination, c.available_at, c.created_at
  FROM unnest(sqlc.arg(destinations)::text[]) AS dest(name)
  CROSS JOIN LATERAL (
    SELECT d.event_id, d.destination, d.available_at, d.created_at
    FROM outbox.outbox_deliveries d
    WHERE d.destination = dest.name AND d.status = 'pending' AND d.available_at <= now()
    ORDER BY d.available_at, d.created_at, d.event_id
    LIMIT sqlc.arg(batch_limit)
    FOR UPDATE SKIP LOCKED
  ) c
), picked AS (
  SELECT event_id, destination FROM candidates
  ORDER BY available_at, created_at, event_id
  LIMIT sqlc.arg(batch_limit)
), leased AS (
  UPDATE outbox.outbox_deliveries d
  SET status = 'leased',
      lease_owner = sqlc.arg(lease_owner)::text,
      lease_token = gen_random_uuid(),
      lease_expires_at = clock_timestamp() + make_interval(secs => sqlc.arg(lease_ms)::bigint / 1000.0),
      current_attempt_id = gen_random_uuid(),
      attempt_count = d.attempt_count + 1,
      last_attempt_at = now()
  FROM picked p
  WHERE d.event_id = p.event_id AND d.destination = p.destination
  RETURNING d.event_id, d.destination, d.consumer_name, d.delivery_set_version, d.expected_receipt_type,
    d.expected_receipt_schema_version, d.required_projection_name, d.required_projection_version, d.mandatory,
    d.lease_token, d.lease_expires_at, d.current_attempt_id, d.attempt_count, d.created_at, d.available_at
), started AS (
  INSERT INTO outbox.outbox_delivery_attempt_starts (attempt_id, destination, event_id, lease_token, started_at)
  SELECT current_attempt_id, destination, event_id, lease_token, now() FROM leased
)
SELECT l.event_id, l.destination, l.consumer_name, l.delivery_set_version, l.expected_receipt_type,
  l.expected_receipt_schema_version, l.required_projection_name, l.required_projection_version, l.mandatory,
  l.lease_token, l.lease_expires_at, l.current_attempt_id, l.attempt_count, l.created_at,
  e.event_type, e.schema_version, e.event_envelope, e.event_envelope_digest_algorithm_version, e.event_envelope_sha256
FROM leased l JOIN outbox.outbox_events e ON e.event_id = l.event_id
ORDER BY l.available_at, l.created_at, l.event_id;
