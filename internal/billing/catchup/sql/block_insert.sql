-- BillingSettlementCatchUpWorkAttemptBlocked@1 of one attempt (the fencing
-- trigger refuses a token that is not the generation's latest attempt).
INSERT INTO billing.settlement_catch_up_blocks (settlement_dimension_id, work_generation, attempt_number, fencing_token,
  blocked_ref, blocked_schema_version, blocked_digest_algorithm_version, blocked_digest, conflict_fact_ref,
  conflict_fact_schema_version, conflict_fact_digest_algorithm_version, conflict_fact_digest, blocked_body, blocked_at)
VALUES (@settlement_dimension_id, @work_generation, @attempt_number, @fencing_token, @blocked_ref, @blocked_schema_version,
  @blocked_digest_algorithm_version, @blocked_digest, @conflict_fact_ref, @conflict_fact_schema_version,
  @conflict_fact_digest_algorithm_version, @conflict_fact_digest, @blocked_body, @blocked_at)
