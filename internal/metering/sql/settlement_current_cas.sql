-- name: SettlementCurrentCAS
-- Compare-and-set the pointer from the expected state version to the next.
UPDATE metering.settlement_input_current
SET state_version = @state_version, snapshot_ref = @snapshot_ref, updated_at = now()
WHERE settlement_dimension_id = @settlement_dimension_id AND state_version = @state_version - 1;
