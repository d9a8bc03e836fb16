-- name: ReceiptByRef
-- Whether a receipt ref exists under another key (a conflicting answer).
-- $1 receipt ref.
SELECT projection_name, projection_version, event_id::text
  FROM operations.applied_receipts
 WHERE receipt_ref = $1
