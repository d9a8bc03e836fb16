-- name: DeliveryRetry :one
-- Fenced retry (OB-DELIVER-2): append the retryable finish and move the
-- delivery back to pending with available_at after the backoff. No row: the
-- fence no longer holds.
WITH fenced AS (
  UPDATE outbox.outbox_deliveries d
  SET status = 'pending', available_at = clock_timestamp() + make_interval(secs => sqlc.arg(backoff_ms)::bigint / 1000.0),
      lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, last_error_code = sqlc.arg(error_code)::text
  WHERE d.destination = sqlc.arg(destination) AND d.event_id = sqlc.arg(event_id)
    AND d.current_attempt_id = sqlc.arg(attempt_id)::uuid AND d.lease_token = sqlc.arg(lease_token)::uuid
    AND d.status = 'leased' AND d.lease_expires_at > clock_timestamp()
  RETURNING d.current_attempt_id
)
INSERT INTO outbox.outbox_delivery_attempt_finishes (attempt_id, finished_at, outcome, retry_disposition, normalized_error_code)
SELECT current_attempt_id, now(), 'retryable', 'retry_scheduled', sqlc.arg(error_code)::text FROM fenced
RETURNING attempt_id;
