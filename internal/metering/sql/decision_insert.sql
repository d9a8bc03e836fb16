-- name: DecisionInsert
-- One EligibilityDecision per Work generation (the trigger refuses an old token).
INSERT INTO metering.eligibility_decisions (decision_ref, decision_digest, execution_attempt_id, decision,
  decision_rule_version, work_ref, attempt_number, fencing_token, decision_body)
VALUES (@decision_ref, @decision_digest, @attempt_id, @decision, @rule_version, @work_ref, @attempt_number,
  @fencing_token, @decision_body);
