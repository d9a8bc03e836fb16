-- name: EligibilityConflictInsert
-- ExecutionEligibilityConflictFact@1, insert-or-compare on (attempt,
-- requested eligibility fact quadruple, reason): the stored body either way
-- (issue 32).
WITH ins AS (
  INSERT INTO execution.eligibility_conflict_facts (execution_eligibility_conflict_fact_ref,
    execution_eligibility_conflict_fact_schema_version, execution_eligibility_conflict_fact_digest_algorithm_version,
    execution_eligibility_conflict_fact_digest, execution_attempt_id, requested_fact_ref, requested_fact_digest,
    reason_code, fact_body, detected_at)
  VALUES (@fact_ref, '1', 'jcs-sha256-v1', @fact_digest, @execution_attempt_id, @requested_ref, @requested_digest,
    @reason_code, @fact_body, @detected_at)
  ON CONFLICT (execution_attempt_id, requested_fact_ref, requested_fact_digest, reason_code) DO NOTHING
  RETURNING fact_body
)
SELECT fact_body FROM ins
UNION ALL
SELECT fact_body FROM execution.eligibility_conflict_facts
 WHERE execution_attempt_id = @execution_attempt_id AND requested_fact_ref = @requested_ref
   AND requested_fact_digest = @requested_digest AND reason_code = @reason_code
LIMIT 1;
