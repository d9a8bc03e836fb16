-- Execution owner (schema execution, database execution), ADR-031
-- "准入与执行身份必须内容寻址" and "Attempt 关闭是 Execution 的线性化边界":
-- a Run's execution state is entered only through Core's RunExecutionToken@1
-- (verified against readRunAdmissionManifest@1 before the insert), and moves
-- accepting_attempts → attempts_closed by CAS, never back. Attempts are
-- immutable and carry their content-addressed AttemptExecutionManifest@1;
-- an attempt is only created while its run accepts attempts (the insert
-- trigger takes a share lock on the run row, which the closure's FOR UPDATE
-- excludes).
--
-- Custom SQLSTATEs: EX001 update/delete of an immutable execution fact;
-- EX002 illegal run state transition (reopen, skip, identity change);
-- EX003 attempt for a run that is not accepting attempts.

-- +goose Up
-- +goose StatementBegin
CREATE SCHEMA execution;

COMMENT ON SCHEMA execution IS
  'OceanWay Execution owner: run execution states, attempts and their manifests, eligibility facts, attempt-set closures.';

CREATE FUNCTION execution.reject_change() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  RAISE EXCEPTION 'execution: % on %.% is forbidden (immutable execution fact)', TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME
    USING ERRCODE = 'EX001';
END
$fn$;

CREATE TABLE execution.run_execution_states (
  run_id                                          uuid        NOT NULL PRIMARY KEY,
  tenant_kind                                     text        NOT NULL CHECK (tenant_kind IN ('organization', 'personal')),
  tenant_id                                       uuid        NOT NULL,
  workspace_id                                    uuid        NOT NULL,
  project_id                                      uuid,
  billing_account_id                              uuid        NOT NULL,
  billing_reservation_id                          uuid        NOT NULL UNIQUE,
  run_admission_manifest_ref                      text        NOT NULL UNIQUE,
  run_admission_manifest_schema_version           text        NOT NULL CHECK (run_admission_manifest_schema_version = '1'),
  run_admission_manifest_digest_algorithm_version text        NOT NULL CHECK (run_admission_manifest_digest_algorithm_version = 'jcs-sha256-v1'),
  run_admission_manifest_digest                   text        NOT NULL CHECK (run_admission_manifest_digest ~ '^[0-9a-f]{64}$'),
  run_execution_token_ref                         text        NOT NULL UNIQUE,
  run_execution_token_schema_version              text        NOT NULL CHECK (run_execution_token_schema_version = '1'),
  run_execution_token_digest_algorithm_version    text        NOT NULL CHECK (run_execution_token_digest_algorithm_version = 'jcs-sha256-v1'),
  run_execution_token_digest                      text        NOT NULL CHECK (run_execution_token_digest ~ '^[0-9a-f]{64}$'),
  run_execution_token_body                        text        NOT NULL,
  state                                           text        NOT NULL CHECK (state IN ('accepting_attempts', 'attempts_closed')),
  -- 1 while accepting attempts, 2 once closed (the closure's state version).
  state_version                                   bigint      NOT NULL CHECK (state_version IN (1, 2)),
  opened_at                                       timestamptz NOT NULL,
  closed_at                                       timestamptz,
  CHECK ((state = 'accepting_attempts') = (state_version = 1)),
  CHECK ((state = 'attempts_closed') = (closed_at IS NOT NULL))
);

CREATE FUNCTION execution.guard_run_state() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF /* guard EX002.run-born-accepting */ NEW.state <> 'accepting_attempts' OR NEW.state_version <> 1 THEN
      RAISE EXCEPTION 'execution: a run execution state starts as accepting_attempts at version 1'
        USING ERRCODE = 'EX002';
    END IF;
    RETURN NEW;
  END IF;
  IF /* guard EX001.run-state-no-delete */ TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'execution: DELETE on execution.run_execution_states is forbidden' USING ERRCODE = 'EX001';
  END IF;
  IF /* guard EX002.run-only-closes */ OLD.state <> 'accepting_attempts' OR NEW.state <> 'attempts_closed' OR NEW.state_version <> OLD.state_version + 1 THEN
    RAISE EXCEPTION 'execution: run % cannot move % → % (no reopen, no second closure)', OLD.run_id, OLD.state, NEW.state
      USING ERRCODE = 'EX002';
  END IF;
  IF /* guard EX002.run-identity-immutable */ (NEW.run_id, NEW.tenant_kind, NEW.tenant_id, NEW.workspace_id, NEW.project_id, NEW.billing_account_id,
      NEW.billing_reservation_id, NEW.run_admission_manifest_ref, NEW.run_admission_manifest_schema_version,
      NEW.run_admission_manifest_digest_algorithm_version, NEW.run_admission_manifest_digest,
      NEW.run_execution_token_ref, NEW.run_execution_token_schema_version,
      NEW.run_execution_token_digest_algorithm_version, NEW.run_execution_token_digest,
      NEW.run_execution_token_body, NEW.opened_at)
     IS DISTINCT FROM
     (OLD.run_id, OLD.tenant_kind, OLD.tenant_id, OLD.workspace_id, OLD.project_id, OLD.billing_account_id,
      OLD.billing_reservation_id, OLD.run_admission_manifest_ref, OLD.run_admission_manifest_schema_version,
      OLD.run_admission_manifest_digest_algorithm_version, OLD.run_admission_manifest_digest,
      OLD.run_execution_token_ref, OLD.run_execution_token_schema_version,
      OLD.run_execution_token_digest_algorithm_version, OLD.run_execution_token_digest,
      OLD.run_execution_token_body, OLD.opened_at) THEN
    RAISE EXCEPTION 'execution: the identity of run % is immutable', OLD.run_id USING ERRCODE = 'EX002';
  END IF;
  RETURN NEW;
END
$fn$;

CREATE TRIGGER run_execution_states_guard
  BEFORE INSERT OR UPDATE OR DELETE ON execution.run_execution_states
  FOR EACH ROW EXECUTE FUNCTION execution.guard_run_state();

CREATE TABLE execution.attempts (
  execution_attempt_id                                uuid        NOT NULL PRIMARY KEY,
  run_id                                              uuid        NOT NULL REFERENCES execution.run_execution_states,
  run_step_id                                         uuid        NOT NULL,
  attempt_execution_manifest_ref                      text        NOT NULL UNIQUE,
  attempt_execution_manifest_schema_version           text        NOT NULL CHECK (attempt_execution_manifest_schema_version = '1'),
  attempt_execution_manifest_digest_algorithm_version text        NOT NULL CHECK (attempt_execution_manifest_digest_algorithm_version = 'jcs-sha256-v1'),
  attempt_execution_manifest_digest                   text        NOT NULL CHECK (attempt_execution_manifest_digest ~ '^[0-9a-f]{64}$'),
  manifest_body                                       text        NOT NULL,
  model_deployment_id                                 text        NOT NULL,
  gateway_deployment_id                               text        NOT NULL,
  routing_policy_revision                             bigint      NOT NULL CHECK (routing_policy_revision >= 1),
  created_at                                          timestamptz NOT NULL
);

CREATE INDEX attempts_by_run ON execution.attempts (run_id, run_step_id, execution_attempt_id);

CREATE FUNCTION execution.guard_attempt_insert() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  s text;
BEGIN
  -- The share lock conflicts with the closure's FOR UPDATE: an attempt
  -- commits before the closure locks the run, or it sees attempts_closed.
  SELECT state INTO s FROM execution.run_execution_states WHERE run_id = NEW.run_id FOR SHARE;
  IF /* guard EX003.attempt-run-not-accepting */ s IS DISTINCT FROM 'accepting_attempts' THEN
    RAISE EXCEPTION 'execution: run % is not accepting attempts (state %)', NEW.run_id, coalesce(s, 'missing')
      USING ERRCODE = 'EX003';
  END IF;
  RETURN NEW;
END
$fn$;

CREATE TRIGGER attempts_guard_insert
  BEFORE INSERT ON execution.attempts
  FOR EACH ROW EXECUTE FUNCTION execution.guard_attempt_insert();

CREATE TRIGGER /* guard EX001.attempts-immutable */ attempts_immutable
  BEFORE UPDATE OR DELETE ON execution.attempts
  FOR EACH ROW EXECUTE FUNCTION execution.reject_change();
-- +goose StatementEnd
