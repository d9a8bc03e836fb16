-- name: ReceiptByKey :one
-- The one receipt of (consumer, projection, version, event) (OPS-5).
SELECT receipt_ref, receipt_schema_version, receipt_digest_algorithm_version, receipt_digest, receipt_body
  FROM operations.applied_receipts
 WHERE consumer_name = 'operations_projector' AND projection_name = @projection_name
   AND projection_version = @projection_version AND event_id = @event_id;
