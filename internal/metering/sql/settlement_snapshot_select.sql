-- name: SettlementSnapshotSelect
-- One SettlementInputSnapshot@1 of a dimension at a state version (lineage reads).
SELECT state_version, snapshot_ref, snapshot_schema_version, snapshot_digest_algorithm_version,
       snapshot_digest, snapshot_body
FROM metering.settlement_input_snapshots
WHERE settlement_dimension_id = @settlement_dimension_id AND state_version = @state_version;
