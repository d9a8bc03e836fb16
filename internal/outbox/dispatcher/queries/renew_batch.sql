-- name: DeliveryRenewQueued :batchone
-- Fenced lease renewal of one queued delivery (OB-CLAIM-2, issue 17); the
-- dispatcher sends one per queued delivery in one round trip. No row: the
-- fence no longer holds.
UPDATE outbox.outbox_deliveries d
SET lease_expires_at = clock_timestamp() + make_interval(secs => sqlc.arg(lease_ms)::bigint / 1000.0)
WHERE d.destination = sqlc.arg(destination) AND d.event_id = sqlc.arg(event_id)
  AND d.current_attempt_id = sqlc.arg(attempt_id)::uuid AND d.lease_token = sqlc.arg(lease_token)::uuid
  AND d.status = 'leased' AND d.lease_expires_at > clock_timestamp()
RETURNING d.current_attempt_id;
