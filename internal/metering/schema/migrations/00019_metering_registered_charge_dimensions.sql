-- The expected charge dimension set (issue 32 part 4; ADR-031 "Usage Work只有
-- 在全部Charge Dimension的Eligibility/MeterEvent/SettlementInput及其下游
-- Mandatory Event同事务提交...才完成").
--
-- attempt_charge_dimensions: the charge dimension set a dispatched attempt's
-- AttemptExecutionManifest@1 froze (Contracts registry version and sorted
-- keys), as the worker read it from Execution (readAttemptExecutionManifest@1,
-- compared by quadruple); written once (insert-or-compare), never changed.
--
-- charge_dimension_awaits: a registered dimension the eligibility Work found
-- without any Gateway usage availability yet (awaiting_evidence): the Work
-- stays active and waits for that dimension's availability event (its new
-- generation supersedes the Work); one row per attempt and dimension, the
-- first time it was awaited, written only by the Work's latest attempt.
--
-- work_finishes_registered_dimensions: an eligibility Work of a dispatched
-- attempt finishes applied only when its registered set is stored and every
-- registered dimension has a Current settlement input (ME014). Both lookups
-- are by the attempt's key and the settlement pointers' attempt index
-- (settlement_input_current_attempt: one pointer per dimension of the
-- attempt): they read no more as history grows.

-- +goose Up
-- +goose StatementBegin
CREATE TABLE metering.attempt_charge_dimensions (
  execution_attempt_id                 uuid        PRIMARY KEY REFERENCES metering.input_fences,
  attempt_execution_manifest_ref       text        NOT NULL,
  attempt_execution_manifest_digest    text        NOT NULL CHECK (attempt_execution_manifest_digest ~ '^[0-9a-f]{64}$'),
  charge_dimension_registry_version    text        NOT NULL CHECK (charge_dimension_registry_version <> ''),
  charge_dimension_keys                text[]      NOT NULL CHECK (/* guard ME014.registered-set-empty */ cardinality(charge_dimension_keys) >= 1),
  recorded_at                          timestamptz NOT NULL DEFAULT now()
);
CREATE TRIGGER /* guard ME001.attempt-charge-dimensions-insert-only */ attempt_charge_dimensions_insert_only
  BEFORE UPDATE OR DELETE ON metering.attempt_charge_dimensions
  FOR EACH ROW EXECUTE FUNCTION metering.reject_change();
CREATE TRIGGER /* guard ME001.attempt-charge-dimensions-no-truncate */ attempt_charge_dimensions_no_truncate
  BEFORE TRUNCATE ON metering.attempt_charge_dimensions
  FOR EACH STATEMENT EXECUTE FUNCTION metering.reject_change();

CREATE TABLE metering.charge_dimension_awaits (
  execution_attempt_id  uuid        NOT NULL REFERENCES metering.attempt_charge_dimensions,
  charge_dimension_key  text        NOT NULL,
  work_ref              text        NOT NULL,
  attempt_number        bigint      NOT NULL,
  fencing_token         uuid        NOT NULL,
  recorded_at           timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (execution_attempt_id, charge_dimension_key),
  FOREIGN KEY (work_ref, attempt_number, fencing_token) REFERENCES metering.work_attempts (work_ref, attempt_number, fencing_token)
);
CREATE TRIGGER charge_dimension_awaits_latest_attempt BEFORE INSERT ON metering.charge_dimension_awaits
  FOR EACH ROW EXECUTE FUNCTION metering.require_latest_attempt('fact', 'eligibility_and_settlement_input');
CREATE TRIGGER /* guard ME001.charge-dimension-awaits-insert-only */ charge_dimension_awaits_insert_only
  BEFORE UPDATE OR DELETE ON metering.charge_dimension_awaits
  FOR EACH ROW EXECUTE FUNCTION metering.reject_change();
CREATE TRIGGER /* guard ME001.charge-dimension-awaits-no-truncate */ charge_dimension_awaits_no_truncate
  BEFORE TRUNCATE ON metering.charge_dimension_awaits
  FOR EACH STATEMENT EXECUTE FUNCTION metering.reject_change();

CREATE FUNCTION metering.guard_dimension_await() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF /* guard ME014.await-not-registered */ NOT EXISTS (SELECT 1 FROM metering.attempt_charge_dimensions
      WHERE execution_attempt_id = NEW.execution_attempt_id AND NEW.charge_dimension_key = ANY (charge_dimension_keys)) THEN
    RAISE EXCEPTION 'metering: attempt % does not register charge dimension %', NEW.execution_attempt_id, NEW.charge_dimension_key
      USING ERRCODE = 'ME014';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER charge_dimension_awaits_registered BEFORE INSERT ON metering.charge_dimension_awaits
  FOR EACH ROW EXECUTE FUNCTION metering.guard_dimension_await();

CREATE FUNCTION metering.require_registered_dimensions_committed() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  attempt  uuid;
  lane     text;
  disp     text;
  keys     text[];
  missing  text[];
BEGIN
  IF NEW.outcome_state <> 'applied' THEN
    RETURN NEW;
  END IF;
  SELECT execution_attempt_id, lane_kind INTO attempt, lane FROM metering.input_works WHERE work_ref = NEW.work_ref;
  IF lane IS DISTINCT FROM 'eligibility_and_settlement_input' THEN
    RETURN NEW;
  END IF;
  SELECT dispatch_disposition INTO disp FROM metering.input_fences WHERE execution_attempt_id = attempt;
  IF disp IS DISTINCT FROM 'dispatched' THEN
    RETURN NEW; -- a not_dispatched attempt settles its one not_dispatched dimension
  END IF;
  SELECT charge_dimension_keys INTO keys FROM metering.attempt_charge_dimensions WHERE execution_attempt_id = attempt;
  IF /* guard ME014.applied-without-registered-set */ keys IS NULL THEN
    RAISE EXCEPTION 'metering: eligibility work % of attempt % finishes applied without its registered charge dimension set', NEW.work_ref, attempt
      USING ERRCODE = 'ME014';
  END IF;
  SELECT array_agg(k ORDER BY k) INTO missing FROM unnest(keys) AS u(k)
   WHERE NOT EXISTS (SELECT 1 FROM metering.settlement_input_current c
                      WHERE c.execution_attempt_id = attempt AND c.charge_dimension_key = u.k);
  IF /* guard ME014.applied-with-dimension-uncommitted */ missing IS NOT NULL THEN
    RAISE EXCEPTION 'metering: eligibility work % of attempt % finishes applied while registered dimensions % have no settlement input', NEW.work_ref, attempt, missing
      USING ERRCODE = 'ME014';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER work_finishes_registered_dimensions BEFORE INSERT ON metering.work_finishes
  FOR EACH ROW EXECUTE FUNCTION metering.require_registered_dimensions_committed();

REVOKE ALL ON metering.attempt_charge_dimensions, metering.charge_dimension_awaits FROM PUBLIC;
GRANT SELECT, INSERT ON metering.attempt_charge_dimensions, metering.charge_dimension_awaits TO oceanway_metering;
REVOKE ALL ON FUNCTION metering.guard_dimension_await(), metering.require_registered_dimensions_committed() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION metering.guard_dimension_await(), metering.require_registered_dimensions_committed() TO oceanway_metering;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DROP TRIGGER work_finishes_registered_dimensions ON metering.work_finishes;
DROP FUNCTION metering.require_registered_dimensions_committed();
DROP TABLE metering.charge_dimension_awaits;
DROP FUNCTION metering.guard_dimension_await();
DROP TABLE metering.attempt_charge_dimensions;
-- +goose StatementEnd
