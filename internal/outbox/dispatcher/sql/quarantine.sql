-- Fenced quarantine (OB-DELIVER-2, OB-STORE-5): append the finish, set the
-- terminal quarantined state and insert the explicit quarantine row with the
-- reason and the event's envelope digest.
-- $1 destination, $2 event id, $3 attempt id, $4 lease token, $5 outcome
-- (non_retryable | retryable past max attempts), $6 normalized code, $7 reason.
WITH fenced AS (
  UPDATE outbox.outbox_deliveries d
  SET status = 'quarantined', lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, last_error_code = $6
  WHERE d.destination = $1 AND d.event_id = $2 AND d.current_attempt_id = $3 AND d.lease_token = $4
    AND d.status = 'leased' AND d.lease_expires_at > clock_timestamp()
  RETURNING d.event_id, d.destination, d.current_attempt_id
), finished AS (
  INSERT INTO outbox.outbox_delivery_attempt_finishes (attempt_id, finished_at, outcome, retry_disposition, normalized_error_code)
  SELECT current_attempt_id, now(), $5, 'quarantined', $6 FROM fenced
  RETURNING attempt_id
)
INSERT INTO outbox.outbox_quarantine (destination, event_id, reason, event_envelope_digest_algorithm_version,
  event_envelope_sha256, quarantined_at, attempt_id)
SELECT f.destination, f.event_id, $7, e.event_envelope_digest_algorithm_version, e.event_envelope_sha256, now(), f.current_attempt_id
FROM fenced f JOIN outbox.outbox_events e ON e.event_id = f.event_id
JOIN finished fin ON fin.attempt_id = f.current_attempt_id
RETURNING attempt_id
