-- name: SettlementSnapshotInsert
-- event_id names the version's metering.settlement-input.current-changed@1
-- (unique; PostgreSQL checks both ways at COMMIT, ME005 and ME008).
INSERT INTO metering.settlement_input_snapshots (settlement_dimension_id, state_version, snapshot_ref,
  snapshot_schema_version, snapshot_digest_algorithm_version, snapshot_digest, content_digest,
  predecessor_state_version, predecessor_snapshot_ref, billing_reservation_id, run_id, run_step_id,
  execution_attempt_id, charge_dimension_key, target_net_amount, reconciliation_state,
  work_ref, attempt_number, fencing_token, snapshot_body, event_id)
VALUES (@settlement_dimension_id, @state_version, @snapshot_ref, '1', 'jcs-sha256-v1', @snapshot_digest, @content_digest,
  @predecessor_state_version, @predecessor_snapshot_ref, @billing_reservation_id, @run_id, @run_step_id,
  @attempt_id, @charge_dimension_key, @target_net_amount::numeric, @reconciliation_state,
  @work_ref, @attempt_number, @fencing_token, @snapshot_body, @event_id);
