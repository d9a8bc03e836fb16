-- name: DecisionInsert
-- Insert-or-find the content-addressed EligibilityDecision (the trigger
-- refuses an old token or generation); returns the stored ref.
WITH ins AS (
  INSERT INTO metering.eligibility_decisions (decision_ref, decision_digest, execution_attempt_id, decision,
    decision_rule_version, work_ref, attempt_number, fencing_token, decision_body)
  VALUES (@decision_ref, @decision_digest, @attempt_id, @decision, @rule_version, @work_ref, @attempt_number,
    @fencing_token, @decision_body)
  ON CONFLICT (decision_digest) DO NOTHING
  RETURNING decision_ref
)
SELECT decision_ref FROM ins
UNION ALL
SELECT decision_ref FROM metering.eligibility_decisions WHERE decision_digest = @decision_digest
LIMIT 1;
