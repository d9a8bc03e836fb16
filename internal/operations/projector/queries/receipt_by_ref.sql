-- name: ReceiptByRef :one
-- Whether a receipt ref exists under another key (a conflicting answer).
SELECT projection_name, projection_version, event_id::text AS event_id
  FROM operations.applied_receipts
 WHERE receipt_ref = @receipt_ref;
