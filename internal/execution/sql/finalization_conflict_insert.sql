-- name: FinalizationConflictInsert
-- RunExecutionFinalizationConflictFact@1, insert-or-compare on (run,
-- requested finalization quadruple, reason): the stored body either way
-- (issue 32).
WITH ins AS (
  INSERT INTO execution.run_finalization_conflict_facts (run_execution_finalization_conflict_ref,
    run_execution_finalization_conflict_schema_version, run_execution_finalization_conflict_digest_algorithm_version,
    run_execution_finalization_conflict_digest, run_id, requested_finalization_ref, requested_finalization_digest,
    reason_code, fact_body, detected_at)
  VALUES (@fact_ref, '1', 'jcs-sha256-v1', @fact_digest, @run_id, @requested_ref, @requested_digest, @reason_code, @fact_body, @detected_at)
  ON CONFLICT (run_id, requested_finalization_ref, requested_finalization_digest, reason_code) DO NOTHING
  RETURNING fact_body
)
SELECT fact_body FROM ins
UNION ALL
SELECT fact_body FROM execution.run_finalization_conflict_facts
 WHERE run_id = @run_id AND requested_finalization_ref = @requested_ref AND requested_finalization_digest = @requested_digest
   AND reason_code = @reason_code
LIMIT 1;
