-- name: DeliveryAckBatch :many
-- Fenced acks (OB-CLAIM-2, OB-DELIVER-5), one or many in one statement, each
-- row guarded by its own exact fence: set acknowledged, freeze the ack
-- receipt type and quadruple, append the single success finish. Rows whose
-- fence does not hold are simply not returned (lease lost for that one
-- only). The arguments are parallel arrays, one element per ack; ROWS FROM
-- (unnest(a), unnest(b), ...) is what the multi-argument unnest(a, b, ...)
-- expands to, spelled out because sqlc knows only the one-argument form.
-- The status the fence requires comes from the input (i.leased), not a
-- literal: with `d.status = 'leased'` spelled out the planner may walk the
-- partial index outbox_deliveries_claim_leased (every entry an ended lease
-- left behind until vacuum) and join-filter it, instead of one primary-key
-- probe per ack (issue 17; TestAck_OBPUB1_PublicationPlansUsePrimaryKeys).
-- MATERIALIZED keeps the planner from folding i.leased back into a literal.
WITH input AS MATERIALIZED (
  SELECT *, 'leased'::text AS leased FROM ROWS FROM (unnest(sqlc.arg(destinations)::text[]), unnest(sqlc.arg(event_ids)::uuid[]),
    unnest(sqlc.arg(attempt_ids)::uuid[]), unnest(sqlc.arg(lease_tokens)::uuid[]), unnest(sqlc.arg(consumer_names)::text[]),
    unnest(sqlc.arg(receipt_types)::text[]), unnest(sqlc.arg(receipt_refs)::text[]),
    unnest(sqlc.arg(receipt_schema_versions)::text[]), unnest(sqlc.arg(receipt_digest_algorithm_versions)::text[]),
    unnest(sqlc.arg(receipt_digests)::text[]), unnest(sqlc.arg(envelope_digest_algorithm_versions)::text[]),
    unnest(sqlc.arg(envelope_sha256s)::text[]))
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
    AND d.lease_token = i.lease_token AND d.status = i.leased AND d.lease_expires_at > clock_timestamp()
  RETURNING d.current_attempt_id
)
INSERT INTO outbox.outbox_delivery_attempt_finishes (attempt_id, finished_at, outcome, retry_disposition)
SELECT current_attempt_id, now(), 'acknowledged', 'none' FROM fenced
RETURNING attempt_id;
