-- ExecutionEligibilityConflictFact@1 (issue 32): the conflicting answer of
-- readExecutionEligibilityFact@1 is stored insert-or-compare on (attempt,
-- requested eligibility fact quadruple, reason) and answered with the stored
-- fact, whose quadruple a Metering Blocked@1 of cause
-- execution_eligibility_owner_conflict names.
--
--   EX001 (extended) insert-only: UPDATE, DELETE and TRUNCATE refused for
--         every role, the superuser included.
--   EX014 a forged fact: its columns must equal its canonical body, and a
--         stored eligibility fact it names must be the attempt's.

-- +goose Up
-- +goose StatementBegin
CREATE TABLE execution.eligibility_conflict_facts (
  execution_eligibility_conflict_fact_ref                      text        NOT NULL PRIMARY KEY,
  execution_eligibility_conflict_fact_schema_version           text        NOT NULL CHECK (execution_eligibility_conflict_fact_schema_version = '1'),
  execution_eligibility_conflict_fact_digest_algorithm_version text        NOT NULL CHECK (execution_eligibility_conflict_fact_digest_algorithm_version = 'jcs-sha256-v1'),
  execution_eligibility_conflict_fact_digest                   text        NOT NULL CHECK (execution_eligibility_conflict_fact_digest ~ '^[0-9a-f]{64}$'),
  execution_attempt_id                                         uuid        NOT NULL REFERENCES execution.attempts (execution_attempt_id),
  requested_fact_ref                                           text        NOT NULL,
  requested_fact_digest                                        text        NOT NULL,
  reason_code                                                  text        NOT NULL,
  fact_body                                                    text        NOT NULL,
  detected_at                                                  timestamptz NOT NULL,
  UNIQUE (execution_attempt_id, requested_fact_ref, requested_fact_digest, reason_code)
);

CREATE FUNCTION execution.guard_eligibility_conflict_fact() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  j jsonb;
  stored text;
BEGIN
  j := NEW.fact_body::jsonb;
  SELECT execution_eligibility_fact_ref INTO stored FROM execution.eligibility_facts WHERE execution_attempt_id = NEW.execution_attempt_id;
  IF /* guard EX014.conflict-fact-forged */ jsonb_typeof(j) IS DISTINCT FROM 'object' OR
     (j->>'executionEligibilityConflictFactRef', j->>'executionEligibilityConflictFactSchemaVersion',
      j->>'executionEligibilityConflictFactDigestAlgorithmVersion', j->>'executionEligibilityConflictFactDigest',
      j->>'executionAttemptId', j->>'requestedExecutionEligibilityFactRef', j->>'requestedExecutionEligibilityFactDigest', j->>'reasonCode')
     IS DISTINCT FROM
     (NEW.execution_eligibility_conflict_fact_ref, NEW.execution_eligibility_conflict_fact_schema_version,
      NEW.execution_eligibility_conflict_fact_digest_algorithm_version, NEW.execution_eligibility_conflict_fact_digest,
      NEW.execution_attempt_id::text, NEW.requested_fact_ref, NEW.requested_fact_digest, NEW.reason_code) OR
     (j ? 'storedExecutionEligibilityFactRef' AND j->>'storedExecutionEligibilityFactRef' IS DISTINCT FROM stored) THEN
    RAISE EXCEPTION 'execution: eligibility conflict fact % does not describe what it stores or names another fact than attempt %''s',
      NEW.execution_eligibility_conflict_fact_ref, NEW.execution_attempt_id
      USING ERRCODE = 'EX014';
  END IF;
  RETURN NEW;
END
$fn$;

CREATE TRIGGER eligibility_conflict_facts_guard BEFORE INSERT ON execution.eligibility_conflict_facts
  FOR EACH ROW EXECUTE FUNCTION execution.guard_eligibility_conflict_fact();
CREATE TRIGGER /* guard EX001.eligibility-conflicts-insert-only */ eligibility_conflict_facts_insert_only
  BEFORE UPDATE OR DELETE ON execution.eligibility_conflict_facts
  FOR EACH ROW EXECUTE FUNCTION execution.reject_change();
CREATE TRIGGER /* guard EX001.eligibility-conflicts-no-truncate */ eligibility_conflict_facts_no_truncate
  BEFORE TRUNCATE ON execution.eligibility_conflict_facts
  FOR EACH STATEMENT EXECUTE FUNCTION execution.reject_truncate();

REVOKE ALL ON execution.eligibility_conflict_facts FROM PUBLIC;
REVOKE ALL ON FUNCTION execution.guard_eligibility_conflict_fact() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION execution.guard_eligibility_conflict_fact() TO oceanway_execution;
GRANT SELECT, INSERT ON execution.eligibility_conflict_facts TO oceanway_execution;
-- +goose StatementEnd

-- +goose Down
-- forward-only
