-- name: SettlementValidationPointer
-- The dimension's Current pointer, share-locked: a concurrent snapshot CAS
-- waits for the validation to commit, so the receipt is exact at commit.
SELECT state_version, snapshot_ref FROM metering.settlement_input_current
WHERE settlement_dimension_id = @settlement_dimension_id
FOR SHARE;
