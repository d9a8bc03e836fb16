-- name: SettlementCurrentInsert
-- The dimension's first pointer (state version 1); a concurrent first writer loses on the key.
INSERT INTO metering.settlement_input_current (settlement_dimension_id, state_version, snapshot_ref,
  execution_attempt_id, charge_dimension_key)
VALUES (@settlement_dimension_id, 1, @snapshot_ref, @attempt_id, @charge_dimension_key)
ON CONFLICT (settlement_dimension_id) DO NOTHING;
