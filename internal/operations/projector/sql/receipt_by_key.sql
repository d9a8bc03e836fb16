-- name: ReceiptByKey
-- The one receipt of (consumer, projection, version, event) (OPS-5).
-- $1 projection name, $2 projection version, $3 event id.
SELECT receipt_ref, receipt_schema_version, receipt_digest_algorithm_version, receipt_digest, receipt_body
  FROM operations.applied_receipts
 WHERE consumer_name = 'operations_projector' AND projection_name = $1 AND projection_version = $2 AND event_id = $3
