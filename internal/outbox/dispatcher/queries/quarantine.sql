-- name: DeliveryQuarantine :one
-- Fenced quarantine (OB-DELIVER-2, OB-STORE-5): append the finish, set the
-- terminal quarantined state and insert the explicit quarantine row with the
-- reason and the event's envelope digest. outcome is non_retryable, or
-- retryable past max attempts. No row: the fence no longer holds.
WITH fenced AS (
  UPDATE outbox.outbox_deliveries d
  SET status = 'quarantined', lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL,
      last_error_code = sqlc.arg(error_code)::text
  WHERE d.destination = sqlc.arg(destination) AND d.event_id = sqlc.arg(event_id)
    AND d.current_attempt_id = sqlc.arg(attempt_id)::uuid AND d.lease_token = sqlc.arg(lease_token)::uuid
    AND d.status = 'leased' AND d.lease_expires_at > clock_timestamp()
  RETURNING d.event_id, d.destination, d.current_attempt_id
), finished AS (
  INSERT INTO outbox.outbox_delivery_attempt_finishes (attempt_id, finished_at, outcome, retry_disposition, normalized_error_code)
  SELECT current_attempt_id, now(), sqlc.arg(outcome)::text, 'quarantined', sqlc.arg(error_code)::text FROM fenced
  RETURNING attempt_id
)
INSERT INTO outbox.outbox_quarantine (destination, event_id, reason, event_envelope_digest_algorithm_version,
  event_envelope_sha256, quarantined_at, attempt_id)
SELECT f.destination, f.event_id, sqlc.arg(reason)::text, e.event_envelope_digest_algorithm_version, e.event_envelope_sha256, now(), f.current_attempt_id
FROM fenced f JOIN outbox.outbox_events e ON e.event_id = f.event_id
JOIN finished fin ON fin.attempt_id = f.current_attempt_id
RETURNING attempt_id;
