-- Fenced lease renewal for slow consumers (OB-CLAIM-2).
-- $1 destination, $2 event id, $3 attempt id, $4 lease token, $5 lease duration (ms).
UPDATE outbox.outbox_deliveries d
SET lease_expires_at = clock_timestamp() + make_interval(secs => $5::bigint / 1000.0)
WHERE d.destination = $1 AND d.event_id = $2 AND d.current_attempt_id = $3 AND d.lease_token = $4
  AND d.status = 'leased' AND d.lease_expires_at > clock_timestamp()
