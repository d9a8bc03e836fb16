-- Batched fenced acks (OB-CLAIM-2, OB-DELIVER-5): many acks in one
-- statement, each row still guarded by its own exact fence. Rows whose fence
-- does not hold are simply not returned (lease lost for that one only).
-- $1 destinations, $2 event ids, $3 attempt ids, $4 lease tokens, $5 consumer
-- names, $6 receipt types, $7 receipt refs, $8 receipt schema versions,
-- $9 receipt digest algorithms, $10 receipt digests, $11 envelope digest
-- algorithms, $12 envelope sha256s — parallel arrays, one element per ack.
WITH input AS (
  SELECT * FROM unnest($1::text[], $2::uuid[], $3::uuid[], $4::uuid[], $5::text[], $6::text[], $7::text[], $8::text[],
    $9::text[], $10::text[], $11::text[], $12::text[])
    AS i(destination, event_id, attempt_id, lease_token, consumer_name, receipt_type, receipt_ref, receipt_schema_version,
         receipt_digest_algorithm_version, receipt_digest, envelope_digest_algorithm_version, envelope_sha256)
), fenced AS (
  UPDATE outbox.outbox_deliveries d
  SET status = 'acknowledged', delivered_at = now(),
      ack_consumer_name = i.consumer_name, ack_receipt_type = i.receipt_type, ack_receipt_key = i.receipt_ref,
      ack_receipt_schema_version = i.receipt_schema_version,
      ack_receipt_digest_algorithm_version = i.receipt_digest_algorithm_version, ack_receipt_digest = i.receipt_digest,
      ack_event_envelope_digest_algorithm_version = i.envelope_digest_algorithm_version,
      ack_event_envelope_sha256 = i.envelope_sha256,
      last_error_code = NULL, last_error_ref = NULL
  FROM input i
  WHERE d.destination = i.destination AND d.event_id = i.event_id AND d.current_attempt_id = i.attempt_id
    AND d.lease_token = i.lease_token AND d.status = 'leased' AND d.lease_expires_at > clock_timestamp()
  RETURNING d.current_attempt_id
)
INSERT INTO outbox.outbox_delivery_attempt_finishes (attempt_id, finished_at, outcome, retry_disposition)
SELECT current_attempt_id, now(), 'acknowledged', 'none' FROM fenced
RETURNING attempt_id
