-- name: ReceiptDigest
SELECT receipt_digest FROM billing.finalization_owner_receipts WHERE receipt_ref = @ref;
