-- name: SettlementAttemptCurrentSelect
-- Every Current SettlementInputSnapshot@1 of one attempt (the pointer's
-- attempt index, then each snapshot by primary key), in charge dimension order.
SELECT c.state_version, s.snapshot_ref, s.snapshot_schema_version, s.snapshot_digest_algorithm_version,
       s.snapshot_digest, s.snapshot_body, c.settlement_dimension_id
FROM metering.settlement_input_current c
JOIN metering.settlement_input_snapshots s
  ON s.settlement_dimension_id = c.settlement_dimension_id AND s.state_version = c.state_version
WHERE c.execution_attempt_id = @execution_attempt_id
ORDER BY c.charge_dimension_key;
