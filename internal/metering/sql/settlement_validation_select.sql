-- name: SettlementValidationSelect
-- The stored receipt of one validation operation (primary key lookup).
SELECT request_digest, receipt_body FROM metering.settlement_validation_receipts
WHERE validation_operation_id = @operation_id;
