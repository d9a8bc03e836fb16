-- Execution eligibility (EX-3, GW-1) and attempt-set closure (EX-2).
--
-- attempt_not_dispatched_facts: AttemptNotDispatchedFact@1, only after the
--   Gateway owner proved the slot terminal_rejected.
-- eligibility_facts: the unique ExecutionEligibilityFact@1 per attempt,
--   appended with execution.attempt-eligibility.finalized@1 in the same
--   transaction (event_id).
-- attempt_set_manifests / run_finalizations: RunAttemptSetManifest@1 and
--   RunExecutionFinalizationFact@1, one per run (a second closure is
--   refused by the primary keys), with execution.run-finalization.closed@1.
--
-- Database guards: every row is immutable (EX001); an eligibility fact is
-- only inserted while its run accepts attempts (EX003, share lock on the
-- run row); at COMMIT a closed run must have its attempt set and its
-- finalization fact, both counting exactly the run's attempts, and every
-- attempt must have its eligibility fact (EX004, deferred constraint
-- trigger).

-- +goose Up
-- +goose StatementBegin
CREATE TABLE execution.attempt_not_dispatched_facts (
  execution_attempt_id                             uuid        NOT NULL PRIMARY KEY REFERENCES execution.attempts,
  attempt_not_dispatched_fact_ref                  text        NOT NULL UNIQUE,
  attempt_not_dispatched_fact_schema_version       text        NOT NULL CHECK (attempt_not_dispatched_fact_schema_version = '1'),
  attempt_not_dispatched_fact_digest_algorithm_version text    NOT NULL CHECK (attempt_not_dispatched_fact_digest_algorithm_version = 'jcs-sha256-v1'),
  attempt_not_dispatched_fact_digest               text        NOT NULL CHECK (attempt_not_dispatched_fact_digest ~ '^[0-9a-f]{64}$'),
  gateway_pre_binding_rejection_fact_ref           text        NOT NULL UNIQUE,
  fact_body                                        text        NOT NULL,
  recorded_at                                      timestamptz NOT NULL
);

CREATE TABLE execution.eligibility_facts (
  execution_attempt_id                             uuid        NOT NULL PRIMARY KEY REFERENCES execution.attempts,
  run_id                                           uuid        NOT NULL REFERENCES execution.run_execution_states,
  execution_eligibility_fact_ref                   text        NOT NULL UNIQUE,
  execution_eligibility_fact_schema_version        text        NOT NULL CHECK (execution_eligibility_fact_schema_version = '1'),
  execution_eligibility_fact_digest_algorithm_version text     NOT NULL CHECK (execution_eligibility_fact_digest_algorithm_version = 'jcs-sha256-v1'),
  execution_eligibility_fact_digest                text        NOT NULL CHECK (execution_eligibility_fact_digest ~ '^[0-9a-f]{64}$'),
  dispatch_disposition                             text        NOT NULL CHECK (dispatch_disposition IN ('dispatched', 'not_dispatched')),
  not_dispatched_execution_attempt_id              uuid        REFERENCES execution.attempt_not_dispatched_facts,
  fact_body                                        text        NOT NULL,
  event_id                                         uuid        NOT NULL UNIQUE,
  finalized_at                                     timestamptz NOT NULL,
  CHECK ((dispatch_disposition = 'not_dispatched') = (not_dispatched_execution_attempt_id IS NOT NULL)),
  CHECK (not_dispatched_execution_attempt_id IS NULL OR not_dispatched_execution_attempt_id = execution_attempt_id)
);

CREATE INDEX eligibility_facts_by_run ON execution.eligibility_facts (run_id);

CREATE TABLE execution.attempt_set_manifests (
  run_id                                           uuid        NOT NULL PRIMARY KEY REFERENCES execution.run_execution_states,
  attempt_set_manifest_ref                         text        NOT NULL UNIQUE,
  attempt_set_manifest_schema_version              text        NOT NULL CHECK (attempt_set_manifest_schema_version = '1'),
  attempt_set_manifest_digest_algorithm_version    text        NOT NULL CHECK (attempt_set_manifest_digest_algorithm_version = 'jcs-sha256-v1'),
  attempt_set_manifest_digest                      text        NOT NULL CHECK (attempt_set_manifest_digest ~ '^[0-9a-f]{64}$'),
  attempt_count                                    bigint      NOT NULL CHECK (attempt_count >= 0),
  manifest_body                                    text        NOT NULL,
  closed_at                                        timestamptz NOT NULL
);

CREATE TABLE execution.run_finalizations (
  run_id                                           uuid        NOT NULL PRIMARY KEY REFERENCES execution.attempt_set_manifests,
  run_execution_finalization_ref                   text        NOT NULL UNIQUE,
  run_execution_finalization_schema_version        text        NOT NULL CHECK (run_execution_finalization_schema_version = '1'),
  run_execution_finalization_digest_algorithm_version text     NOT NULL CHECK (run_execution_finalization_digest_algorithm_version = 'jcs-sha256-v1'),
  run_execution_finalization_digest                text        NOT NULL CHECK (run_execution_finalization_digest ~ '^[0-9a-f]{64}$'),
  run_execution_finalization_state_version         bigint      NOT NULL CHECK (run_execution_finalization_state_version = 2),
  closure_operation_id                             uuid        NOT NULL UNIQUE,
  attempt_count                                    bigint      NOT NULL CHECK (attempt_count >= 0),
  fact_body                                        text        NOT NULL,
  event_id                                         uuid        NOT NULL UNIQUE,
  closed_at                                        timestamptz NOT NULL
);

CREATE TRIGGER eligibility_facts_guard_insert
  BEFORE INSERT ON execution.eligibility_facts
  FOR EACH ROW EXECUTE FUNCTION execution.guard_attempt_insert();

CREATE TRIGGER /* guard EX001.not-dispatched-facts-immutable */ attempt_not_dispatched_facts_immutable
  BEFORE UPDATE OR DELETE ON execution.attempt_not_dispatched_facts
  FOR EACH ROW EXECUTE FUNCTION execution.reject_change();
CREATE TRIGGER /* guard EX001.eligibility-facts-immutable */ eligibility_facts_immutable
  BEFORE UPDATE OR DELETE ON execution.eligibility_facts
  FOR EACH ROW EXECUTE FUNCTION execution.reject_change();
CREATE TRIGGER /* guard EX001.attempt-sets-immutable */ attempt_set_manifests_immutable
  BEFORE UPDATE OR DELETE ON execution.attempt_set_manifests
  FOR EACH ROW EXECUTE FUNCTION execution.reject_change();
CREATE TRIGGER /* guard EX001.finalizations-immutable */ run_finalizations_immutable
  BEFORE UPDATE OR DELETE ON execution.run_finalizations
  FOR EACH ROW EXECUTE FUNCTION execution.reject_change();

CREATE FUNCTION execution.prove_closure() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  attempts bigint;
  missing bigint;
  set_count bigint;
  fact_count bigint;
BEGIN
  IF NEW.state <> 'attempts_closed' THEN
    RETURN NULL;
  END IF;
  SELECT count(*), count(*) FILTER (WHERE e.execution_attempt_id IS NULL)
    INTO attempts, missing
    FROM execution.attempts a
    LEFT JOIN execution.eligibility_facts e ON e.execution_attempt_id = a.execution_attempt_id
   WHERE a.run_id = NEW.run_id;
  SELECT s.attempt_count, f.attempt_count INTO set_count, fact_count
    FROM execution.attempt_set_manifests s
    LEFT JOIN execution.run_finalizations f ON f.run_id = s.run_id
   WHERE s.run_id = NEW.run_id;
  IF missing > 0 OR set_count IS DISTINCT FROM attempts OR fact_count IS DISTINCT FROM attempts THEN
    RAISE EXCEPTION 'execution: closed run % lacks a complete closure (attempts %, without eligibility %, set %, fact %)',
      NEW.run_id, attempts, missing, set_count, fact_count
      USING ERRCODE = 'EX004';
  END IF;
  RETURN NULL;
END
$fn$;

CREATE CONSTRAINT TRIGGER run_execution_states_prove_closure
  AFTER UPDATE ON execution.run_execution_states
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION execution.prove_closure();

GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA execution TO oceanway_execution;
GRANT SELECT, INSERT ON execution.attempt_not_dispatched_facts, execution.eligibility_facts,
  execution.attempt_set_manifests, execution.run_finalizations TO oceanway_execution;
-- +goose StatementEnd
