-- name: ReceiptInsert
INSERT INTO billing.finalization_owner_receipts
  (receipt_ref, receipt_kind, receipt_schema_version, receipt_digest_algorithm_version, receipt_digest, manifest_ref, receipt_body)
VALUES (@ref, @kind, @schema_version, @digest_algorithm_version, @digest, @manifest_ref, @body)
ON CONFLICT (receipt_ref) DO NOTHING;
