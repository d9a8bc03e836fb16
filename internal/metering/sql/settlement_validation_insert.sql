-- name: SettlementValidationInsert
-- Insert-or-compare of one operation's validation receipt (the caller
-- compares the request digest and returns the stored body).
WITH ins AS (
  INSERT INTO metering.settlement_validation_receipts (validation_operation_id, request_digest, purpose,
    settlement_dimension_id, validated_state_version, validated_snapshot_ref, result_state, current_state_version,
    receipt_ref, receipt_digest, receipt_body)
  VALUES (@operation_id, @request_digest, @purpose, @settlement_dimension_id, @validated_state_version,
    @validated_snapshot_ref, @result_state, @current_state_version, @receipt_ref, @receipt_digest, @receipt_body)
  ON CONFLICT (validation_operation_id) DO NOTHING
  RETURNING request_digest, receipt_body
)
SELECT request_digest, receipt_body FROM ins
UNION ALL
SELECT request_digest, receipt_body FROM metering.settlement_validation_receipts WHERE validation_operation_id = @operation_id
LIMIT 1;
