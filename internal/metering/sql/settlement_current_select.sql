-- name: SettlementCurrentSelect
-- The Current SettlementInputSnapshot@1 of one settlement dimension (pointer
-- primary key, then the snapshot primary key: two index lookups).
SELECT c.state_version, s.snapshot_ref, s.snapshot_schema_version, s.snapshot_digest_algorithm_version,
       s.snapshot_digest, s.snapshot_body
FROM metering.settlement_input_current c
JOIN metering.settlement_input_snapshots s
  ON s.settlement_dimension_id = c.settlement_dimension_id AND s.state_version = c.state_version
WHERE c.settlement_dimension_id = @settlement_dimension_id;
