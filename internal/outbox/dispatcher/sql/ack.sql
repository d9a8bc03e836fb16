-- Fenced ack (OB-CLAIM-2, OB-DELIVER-5): set acknowledged, freeze the ack
-- receipt type and quadruple, append the single success finish. Zero rows
-- means the fence no longer holds (lease lost).
-- $1 destination, $2 event id, $3 attempt id, $4 lease token,
-- $5 ack consumer, $6 receipt type, $7 receipt ref, $8 receipt schema version,
-- $9 receipt digest algorithm, $10 receipt digest, $11 envelope digest algorithm, $12 envelope sha256.
WITH fenced AS (
  UPDATE outbox.outbox_deliveries d
  SET status = 'acknowledged', delivered_at = now(),
      ack_consumer_name = $5, ack_receipt_type = $6, ack_receipt_key = $7, ack_receipt_schema_version = $8,
      ack_receipt_digest_algorithm_version = $9, ack_receipt_digest = $10,
      ack_event_envelope_digest_algorithm_version = $11, ack_event_envelope_sha256 = $12,
      last_error_code = NULL, last_error_ref = NULL
  WHERE d.destination = $1 AND d.event_id = $2 AND d.current_attempt_id = $3 AND d.lease_token = $4
    AND d.status = 'leased' AND d.lease_expires_at > clock_timestamp()
  RETURNING d.current_attempt_id
)
INSERT INTO outbox.outbox_delivery_attempt_finishes (attempt_id, finished_at, outcome, retry_disposition)
SELECT current_attempt_id, now(), 'acknowledged', 'none' FROM fenced
RETURNING attempt_id
