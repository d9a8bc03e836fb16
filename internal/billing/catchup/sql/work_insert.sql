-- One immutable catch-up Work generation.
INSERT INTO billing.settlement_catch_up_works (settlement_dimension_id, work_generation, work_ref, work_schema_version,
  work_digest_algorithm_version, work_digest, validation_operation_id, work_cause, fence_revision,
  settlement_state_revision, to_verify_state_version, work_body, created_at)
VALUES (@settlement_dimension_id, @work_generation, @work_ref, @work_schema_version,
  @work_digest_algorithm_version, @work_digest, @validation_operation_id, @work_cause, @fence_revision,
  @settlement_state_revision, @to_verify_state_version, @work_body, @created_at)
