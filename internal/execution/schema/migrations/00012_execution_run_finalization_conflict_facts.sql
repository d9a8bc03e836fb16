-- RunExecutionFinalizationConflictFact@1 stored (issue 32): until now the
-- conflicting answer of readRunFinalizationPrecondition@1 sealed a new fact
-- on every read and stored nothing. The read now stores it insert-or-compare
-- on (run, requested finalization quadruple, reason) and answers with the
-- stored fact, so the same conflict is one durable fact Billing can bind.
--
--   EX001 (extended) insert-only: UPDATE, DELETE and TRUNCATE refused for
--         every role, the superuser included.
--   EX013 a forged fact: its columns must equal its canonical body, and a
--         stored closure it names must be the run's.

-- +goose Up
-- +goose StatementBegin
CREATE TABLE execution.run_finalization_conflict_facts (
  run_execution_finalization_conflict_ref                      text        NOT NULL PRIMARY KEY,
  run_execution_finalization_conflict_schema_version           text        NOT NULL CHECK (run_execution_finalization_conflict_schema_version = '1'),
  run_execution_finalization_conflict_digest_algorithm_version text        NOT NULL CHECK (run_execution_finalization_conflict_digest_algorithm_version = 'jcs-sha256-v1'),
  run_execution_finalization_conflict_digest                   text        NOT NULL CHECK (run_execution_finalization_conflict_digest ~ '^[0-9a-f]{64}$'),
  run_id                                                       uuid        NOT NULL REFERENCES execution.run_execution_states (run_id),
  requested_finalization_ref                                   text        NOT NULL,
  requested_finalization_digest                                text        NOT NULL,
  reason_code                                                  text        NOT NULL,
  fact_body                                                    text        NOT NULL,
  detected_at                                                  timestamptz NOT NULL,
  UNIQUE (run_id, requested_finalization_ref, requested_finalization_digest, reason_code)
);

CREATE FUNCTION execution.guard_finalization_conflict_fact() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  j jsonb;
  stored text;
BEGIN
  j := NEW.fact_body::jsonb;
  SELECT run_execution_finalization_ref INTO stored FROM execution.run_finalizations WHERE run_id = NEW.run_id;
  IF /* guard EX013.conflict-fact-forged */ jsonb_typeof(j) IS DISTINCT FROM 'object' OR
     (j->>'runExecutionFinalizationConflictRef', j->>'runExecutionFinalizationConflictSchemaVersion',
      j->>'runExecutionFinalizationConflictDigestAlgorithmVersion', j->>'runExecutionFinalizationConflictDigest',
      j->>'runId', j->>'requestedRunExecutionFinalizationRef', j->>'requestedRunExecutionFinalizationDigest', j->>'reasonCode')
     IS DISTINCT FROM
     (NEW.run_execution_finalization_conflict_ref, NEW.run_execution_finalization_conflict_schema_version,
      NEW.run_execution_finalization_conflict_digest_algorithm_version, NEW.run_execution_finalization_conflict_digest,
      NEW.run_id::text, NEW.requested_finalization_ref, NEW.requested_finalization_digest, NEW.reason_code) OR
     (j ? 'storedRunExecutionFinalizationRef' AND j->>'storedRunExecutionFinalizationRef' IS DISTINCT FROM stored) THEN
    RAISE EXCEPTION 'execution: finalization conflict fact % does not describe what it stores or names another closure than run %''s',
      NEW.run_execution_finalization_conflict_ref, NEW.run_id
      USING ERRCODE = 'EX013';
  END IF;
  RETURN NEW;
END
$fn$;

CREATE TRIGGER run_finalization_conflict_facts_guard BEFORE INSERT ON execution.run_finalization_conflict_facts
  FOR EACH ROW EXECUTE FUNCTION execution.guard_finalization_conflict_fact();
CREATE TRIGGER /* guard EX001.finalization-conflicts-insert-only */ run_finalization_conflict_facts_insert_only
  BEFORE UPDATE OR DELETE ON execution.run_finalization_conflict_facts
  FOR EACH ROW EXECUTE FUNCTION execution.reject_change();
CREATE TRIGGER /* guard EX001.finalization-conflicts-no-truncate */ run_finalization_conflict_facts_no_truncate
  BEFORE TRUNCATE ON execution.run_finalization_conflict_facts
  FOR EACH STATEMENT EXECUTE FUNCTION execution.reject_truncate();

REVOKE ALL ON execution.run_finalization_conflict_facts FROM PUBLIC;
REVOKE ALL ON FUNCTION execution.guard_finalization_conflict_fact() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION execution.guard_finalization_conflict_fact() TO oceanway_execution;
GRANT SELECT, INSERT ON execution.run_finalization_conflict_facts TO oceanway_execution;
-- +goose StatementEnd

-- +goose Down
-- forward-only
