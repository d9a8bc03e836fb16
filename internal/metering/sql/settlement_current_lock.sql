-- name: SettlementCurrentLock
-- Lock a dimension's Current pointer (the CAS below re-checks its version).
SELECT c.state_version, s.snapshot_ref, s.snapshot_schema_version, s.snapshot_digest_algorithm_version,
       s.snapshot_digest, s.content_digest
FROM metering.settlement_input_current c
JOIN metering.settlement_input_snapshots s
  ON s.settlement_dimension_id = c.settlement_dimension_id AND s.state_version = c.state_version
WHERE c.settlement_dimension_id = @settlement_dimension_id
FOR UPDATE OF c;
