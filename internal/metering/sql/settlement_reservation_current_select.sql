-- name: SettlementReservationCurrentSelect
-- Every Current SettlementInputSnapshot@1 of one billing reservation, in
-- settlement dimension order: each dimension once, by its version 1 in the
-- reservation's partial index (never a later version: the read does not
-- grow with a dimension's history), then its pointer by primary key, then
-- the pointed snapshot by primary key. Both are lateral probes so the
-- generic plan a pooled session keeps cannot hash either table (see
-- settlement_attempt_current_select.sql).
SELECT p.settlement_dimension_id, p.execution_attempt_id, p.state_version, s.snapshot_ref, s.snapshot_schema_version,
       s.snapshot_digest_algorithm_version, s.snapshot_digest, s.billing_reservation_id, s.reconciliation_state, s.snapshot_body
FROM metering.settlement_input_snapshots d
CROSS JOIN LATERAL (
  SELECT c.settlement_dimension_id, c.execution_attempt_id, c.state_version
  FROM metering.settlement_input_current c
  WHERE c.settlement_dimension_id = d.settlement_dimension_id
  LIMIT 1) p
CROSS JOIN LATERAL (
  SELECT x.snapshot_ref, x.snapshot_schema_version, x.snapshot_digest_algorithm_version, x.snapshot_digest,
         x.billing_reservation_id, x.reconciliation_state, x.snapshot_body
  FROM metering.settlement_input_snapshots x
  WHERE x.settlement_dimension_id = p.settlement_dimension_id AND x.state_version = p.state_version
  LIMIT 1) s
WHERE d.billing_reservation_id = @billing_reservation_id AND d.state_version = 1
ORDER BY d.settlement_dimension_id;
