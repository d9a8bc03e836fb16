-- One append-only settlement transition.
INSERT INTO billing.settlement_transitions (settlement_dimension_id, from_settlement_state_revision,
  to_settlement_state_revision, billing_reservation_id, billing_account_id, transition_ref, transition_schema_version,
  transition_digest_algorithm_version, transition_digest, transition_kind, settled_amount_before, settled_amount_after,
  transition_amount, settlement_input_state_version, validation_operation_id, work_generation, event_id, event_envelope_sha256,
  transition_body, committed_at)
VALUES (@settlement_dimension_id, @from_settlement_state_revision,
  @to_settlement_state_revision, @billing_reservation_id, @billing_account_id, @transition_ref, @transition_schema_version,
  @transition_digest_algorithm_version, @transition_digest, @transition_kind, @settled_amount_before::numeric,
  @settled_amount_after::numeric, @transition_amount::numeric, @settlement_input_state_version, @validation_operation_id,
  @work_generation, @event_id, @event_envelope_sha256, @transition_body, @committed_at)
