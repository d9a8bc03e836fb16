-- The dimension's first accepted settlement input event.
INSERT INTO billing.settlement_input_watermarks (billing_reservation_id, settlement_dimension_id, run_id, run_step_id,
  execution_attempt_id, charge_dimension_key, settlement_economic_identity, settlement_input_snapshot_ref,
  settlement_input_snapshot_schema_version, settlement_input_snapshot_digest_algorithm_version,
  settlement_input_snapshot_digest, settlement_input_state_version, last_event_id, inbox_revision, updated_at)
VALUES (@billing_reservation_id, @settlement_dimension_id, @run_id, @run_step_id,
  @execution_attempt_id, @charge_dimension_key, @settlement_economic_identity, @snapshot_ref,
  @snapshot_schema_version, @snapshot_digest_algorithm_version,
  @snapshot_digest, @state_version, @event_id, 1, @now)
