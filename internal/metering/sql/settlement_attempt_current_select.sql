-- name: SettlementAttemptCurrentSelect
-- Every Current SettlementInputSnapshot@1 of one attempt (the pointer's
-- attempt index, then each snapshot by primary key), in charge dimension order.
-- The snapshot is a lateral probe of its key: as a join, a plan made while
-- the table was small hashed every snapshot ever written (seen in the loop
-- benchmark on a server without autovacuum, where such a plan is never
-- replaced).
SELECT c.state_version, s.snapshot_ref, s.snapshot_schema_version, s.snapshot_digest_algorithm_version,
       s.snapshot_digest, s.snapshot_body, c.settlement_dimension_id
FROM metering.settlement_input_current c
CROSS JOIN LATERAL (
  SELECT x.snapshot_ref, x.snapshot_schema_version, x.snapshot_digest_algorithm_version, x.snapshot_digest, x.snapshot_body
  FROM metering.settlement_input_snapshots x
  WHERE x.settlement_dimension_id = c.settlement_dimension_id AND x.state_version = c.state_version
  LIMIT 1) s
WHERE c.execution_attempt_id = @execution_attempt_id
ORDER BY c.charge_dimension_key;
