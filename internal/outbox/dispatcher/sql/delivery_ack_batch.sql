-- Kept out of sqlc (queries/): it finds rows by ctid, which sqlc's
-- catalog does not know.
-- Fenced acks (OB-CLAIM-2, OB-DELIVER-5) of a batch of deliveries in one
-- statement: each row set acknowledged with its frozen ack receipt type and
-- quadruple, and its single success finish appended. Every row carries its
-- own fence (destination, event id, attempt id, lease token, a lease still
-- valid): a row whose fence does not hold matches nothing and returns no
-- attempt id (lease lost for that one only); the others are acknowledged.
-- The rows are found by a primary-key probe per ack (a lateral sub-select
-- that cannot be flattened) and updated by their row ids, so no cached
-- generic plan can turn the batch into a scan of every delivery (a plain
-- UPDATE ... FROM unnest(...) was planned as a hash join over a sequential
-- scan; issue 17). A row changed concurrently is re-checked against its
-- fence on its newest version (READ COMMITTED), as a single-row UPDATE is.
-- uuid arrays are bound as text[] and cast here: pgx has no binary plan for
-- []string into uuid[] and would fail one (and format an error) per call
-- before falling back to text.
WITH input AS (
  SELECT * FROM ROWS FROM (unnest(@destinations::text[]), unnest(@event_ids::text[]::uuid[]),
    unnest(@attempt_ids::text[]::uuid[]), unnest(@lease_tokens::text[]::uuid[]), unnest(@consumer_names::text[]),
    unnest(@receipt_types::text[]), unnest(@receipt_refs::text[]),
    unnest(@receipt_schema_versions::text[]), unnest(@receipt_digest_algorithm_versions::text[]),
    unnest(@receipt_digests::text[]), unnest(@envelope_digest_algorithm_versions::text[]),
    unnest(@envelope_sha256s::text[]))
    AS i(destination, event_id, attempt_id, lease_token, consumer_name, receipt_type, receipt_ref, receipt_schema_version,
         receipt_digest_algorithm_version, receipt_digest, envelope_digest_algorithm_version, envelope_sha256)
), fenced AS (
  UPDATE outbox.outbox_deliveries d
  SET status = 'acknowledged', delivered_at = now(),
      ack_consumer_name = i.consumer_name, ack_receipt_type = i.receipt_type,
      ack_receipt_key = i.receipt_ref, ack_receipt_schema_version = i.receipt_schema_version,
      ack_receipt_digest_algorithm_version = i.receipt_digest_algorithm_version,
      ack_receipt_digest = i.receipt_digest,
      ack_event_envelope_digest_algorithm_version = i.envelope_digest_algorithm_version,
      ack_event_envelope_sha256 = i.envelope_sha256,
      last_error_code = NULL, last_error_ref = NULL
  FROM input i
  WHERE d.ctid = ANY(ARRAY(
          SELECT p.row_id FROM input x
          CROSS JOIN LATERAL (SELECT d0.ctid AS row_id FROM outbox.outbox_deliveries d0
                               WHERE d0.event_id = x.event_id AND d0.destination = x.destination OFFSET 0) p))
    AND d.destination = i.destination AND d.event_id = i.event_id
    AND d.current_attempt_id = i.attempt_id AND d.lease_token = i.lease_token
    AND d.status = 'leased' AND d.lease_expires_at > clock_timestamp()
  RETURNING d.current_attempt_id
)
INSERT INTO outbox.outbox_delivery_attempt_finishes (attempt_id, finished_at, outcome, retry_disposition)
SELECT current_attempt_id, now(), 'acknowledged', 'none' FROM fenced
RETURNING attempt_id;
