-- Fenced retry (OB-DELIVER-2): append the retryable finish and move the
-- delivery back to pending with available_at after the backoff.
-- $1 destination, $2 event id, $3 attempt id, $4 lease token, $5 backoff (ms), $6 normalized code.
WITH fenced AS (
  UPDATE outbox.outbox_deliveries d
  SET status = 'pending', available_at = clock_timestamp() + make_interval(secs => $5::bigint / 1000.0),
      lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, last_error_code = $6
  WHERE d.destination = $1 AND d.event_id = $2 AND d.current_attempt_id = $3 AND d.lease_token = $4
    AND d.status = 'leased' AND d.lease_expires_at > clock_timestamp()
  RETURNING d.current_attempt_id
)
INSERT INTO outbox.outbox_delivery_attempt_finishes (attempt_id, finished_at, outcome, retry_disposition, normalized_error_code)
SELECT current_attempt_id, now(), 'retryable', 'retry_scheduled', $6 FROM fenced
RETURNING attempt_id
