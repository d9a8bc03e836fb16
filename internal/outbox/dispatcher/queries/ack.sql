-- name: DeliveryAck :batchone
-- Fenced ack (OB-CLAIM-2, OB-DELIVER-5) of one delivery: set acknowledged,
-- freeze the ack receipt type and quadruple, append the single success
-- finish. No row: the fence does not hold (lease lost for this one only).
-- A batch of acks sends one of these per ack in one round trip and one
-- transaction (recordAcksTx): each is a primary-key probe whatever the
-- statistics say. (One set-based UPDATE ... FROM unnest(...) was tried: its
-- generic plan, cached while the table was small, hash-joins a sequential
-- scan of every delivery; issue 17.)
WITH fenced AS (
  UPDATE outbox.outbox_deliveries d
  SET status = 'acknowledged', delivered_at = now(),
      ack_consumer_name = sqlc.arg(consumer_name)::text, ack_receipt_type = sqlc.arg(receipt_type)::text,
      ack_receipt_key = sqlc.arg(receipt_ref)::text, ack_receipt_schema_version = sqlc.arg(receipt_schema_version)::text,
      ack_receipt_digest_algorithm_version = sqlc.arg(receipt_digest_algorithm_version)::text,
      ack_receipt_digest = sqlc.arg(receipt_digest)::text,
      ack_event_envelope_digest_algorithm_version = sqlc.arg(envelope_digest_algorithm_version)::text,
      ack_event_envelope_sha256 = sqlc.arg(envelope_sha256)::text,
      last_error_code = NULL, last_error_ref = NULL
  WHERE d.destination = sqlc.arg(destination) AND d.event_id = sqlc.arg(event_id)
    AND d.current_attempt_id = sqlc.arg(attempt_id)::uuid AND d.lease_token = sqlc.arg(lease_token)::uuid
    AND d.status = 'leased' AND d.lease_expires_at > clock_timestamp()
  RETURNING d.current_attempt_id
)
INSERT INTO outbox.outbox_delivery_attempt_finishes (attempt_id, finished_at, outcome, retry_disposition)
SELECT current_attempt_id, now(), 'acknowledged', 'none' FROM fenced
RETURNING attempt_id;
