-- The one finish of a catch-up Work generation.
INSERT INTO billing.settlement_catch_up_finishes (settlement_dimension_id, work_generation, finished_ref, finished_schema_version,
  finished_digest_algorithm_version, finished_digest, outcome, successor_generation, transition_to_revision, finished_body, finished_at,
  attempt_number, fencing_token)
VALUES (@settlement_dimension_id, @work_generation, @finished_ref, @finished_schema_version,
  @finished_digest_algorithm_version, @finished_digest, @outcome, @successor_generation, @transition_to_revision, @finished_body,
  @finished_at, @attempt_number, @fencing_token)
