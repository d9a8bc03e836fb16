-- name: ReceiptLookup
-- The stored receipt of one key. inbox.NewTable fills in the consumer's
-- receipt table and, for projection consumers, the projection condition.
-- $1 consumer name, $2 event id{{projection_args}}.
SELECT event_type, event_schema_version,
       event_envelope_digest_algorithm_version, event_envelope_sha256,
       receipt_ref, receipt_schema_version, receipt_digest_algorithm_version, receipt_digest,
       receipt_body
  FROM {{table}}
 WHERE consumer_name = $1 AND event_id = $2{{projection}}
