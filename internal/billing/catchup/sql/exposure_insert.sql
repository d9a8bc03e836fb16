-- One open, blocked late settlement exposure, with the case generation it
-- joined and its case-requested event (all four null: not_requested).
INSERT INTO billing.late_settlement_exposures (late_settlement_exposure_id, settlement_dimension_id,
  settlement_state_revision, billing_reservation_id, billing_account_id, exposure_ref, exposure_schema_version,
  exposure_digest_algorithm_version, exposure_digest, exposure_amount, exposure_state, automatic_charge, exposure_body,
  recorded_at, case_generation, reconciliation_case_ref, case_event_id, case_event_envelope_sha256)
VALUES (@late_settlement_exposure_id, @settlement_dimension_id,
  @settlement_state_revision, @billing_reservation_id, @billing_account_id, @exposure_ref, @exposure_schema_version,
  @exposure_digest_algorithm_version, @exposure_digest, @exposure_amount::numeric, 'open', 'blocked', @exposure_body,
  @recorded_at, @case_generation, @reconciliation_case_ref, @case_event_id, @case_event_envelope_sha256)
