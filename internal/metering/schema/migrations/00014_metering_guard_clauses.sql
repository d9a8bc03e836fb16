-- Guard clauses one refusal each (issue 37; docs/guard-clauses.md): two
-- guard functions ORed several refusals under one IF, so a test of one of
-- them proved the others too. Same behaviour, same SQLSTATEs and messages;
-- each refusal is now its own IF/ELSIF with its clause marker:
--
--   metering.forward_only (00001)              ME002: the input fence's
--     revision, its work generation, its eligibility fact ref and digest;
--     the cost lane's state version, fence revision and work generation.
--   metering.settlement_input_pointer_cas (00004) ME004: a pointer CAS that
--     does not advance by exactly one, and one that changes the pointer's
--     identity (dimension, execution attempt, charge dimension key).
--
-- Custom SQLSTATEs: ME002, ME004 (as 00001, 00004).

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION metering.forward_only() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF TG_TABLE_NAME = 'input_fences' THEN
    IF /* guard ME002.fence-revision-backwards */ NEW.eligibility_fence_revision < OLD.eligibility_fence_revision THEN
      RAISE EXCEPTION 'metering: input fence % moved backwards or changed its eligibility fact', OLD.execution_attempt_id
        USING ERRCODE = 'ME002';
    ELSIF /* guard ME002.fence-generation-backwards */ NEW.latest_eligibility_work_generation < OLD.latest_eligibility_work_generation THEN
      RAISE EXCEPTION 'metering: input fence % moved backwards or changed its eligibility fact', OLD.execution_attempt_id
        USING ERRCODE = 'ME002';
    ELSIF /* guard ME002.fence-fact-ref-changed */ OLD.eligibility_fact_ref IS NOT NULL
        AND NEW.eligibility_fact_ref IS DISTINCT FROM OLD.eligibility_fact_ref THEN
      RAISE EXCEPTION 'metering: input fence % moved backwards or changed its eligibility fact', OLD.execution_attempt_id
        USING ERRCODE = 'ME002';
    ELSIF /* guard ME002.fence-fact-digest-changed */ OLD.eligibility_fact_digest IS NOT NULL
        AND NEW.eligibility_fact_digest IS DISTINCT FROM OLD.eligibility_fact_digest THEN
      RAISE EXCEPTION 'metering: input fence % moved backwards or changed its eligibility fact', OLD.execution_attempt_id
        USING ERRCODE = 'ME002';
    END IF;
  ELSIF TG_TABLE_NAME = 'usage_watermarks' THEN
    IF /* guard ME002.watermark-not-advanced */ NEW.state_version <= OLD.state_version THEN
      RAISE EXCEPTION 'metering: usage watermark of % did not advance (% -> %)', OLD.execution_attempt_id, OLD.state_version, NEW.state_version
        USING ERRCODE = 'ME002';
    END IF;
  ELSIF TG_TABLE_NAME = 'cost_lanes' THEN
    IF /* guard ME002.cost-lane-state-not-advanced */ NEW.state_version <= OLD.state_version THEN
      RAISE EXCEPTION 'metering: cost lane of % did not advance', OLD.execution_attempt_id
        USING ERRCODE = 'ME002';
    ELSIF /* guard ME002.cost-lane-fence-not-advanced */ NEW.fence_revision <= OLD.fence_revision THEN
      RAISE EXCEPTION 'metering: cost lane of % did not advance', OLD.execution_attempt_id
        USING ERRCODE = 'ME002';
    ELSIF /* guard ME002.cost-lane-generation-not-advanced */ NEW.latest_work_generation <= OLD.latest_work_generation THEN
      RAISE EXCEPTION 'metering: cost lane of % did not advance', OLD.execution_attempt_id
        USING ERRCODE = 'ME002';
    END IF;
  END IF;
  IF /* guard ME002.lane-identity-changed */ TG_OP = 'UPDATE' AND NEW.execution_attempt_id <> OLD.execution_attempt_id THEN
    RAISE EXCEPTION 'metering: lane identity is immutable' USING ERRCODE = 'ME002';
  END IF;
  RETURN NEW;
END
$fn$;

CREATE OR REPLACE FUNCTION metering.settlement_input_pointer_cas() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF /* guard ME004.pointer-starts-at-one */ TG_OP = 'INSERT' AND NEW.state_version <> 1 THEN
    RAISE EXCEPTION 'metering: a settlement input pointer starts at version 1' USING ERRCODE = 'ME004';
  END IF;
  IF /* guard ME004.pointer-not-plus-one */ TG_OP = 'UPDATE' AND NEW.state_version <> OLD.state_version + 1 THEN
    RAISE EXCEPTION 'metering: settlement input pointer % must advance by exactly one version (% -> %)',
      OLD.settlement_dimension_id, OLD.state_version, NEW.state_version USING ERRCODE = 'ME004';
  ELSIF /* guard ME004.pointer-identity-changed */ TG_OP = 'UPDATE' AND (NEW.settlement_dimension_id <> OLD.settlement_dimension_id
      OR NEW.execution_attempt_id <> OLD.execution_attempt_id
      OR NEW.charge_dimension_key <> OLD.charge_dimension_key) THEN
    RAISE EXCEPTION 'metering: settlement input pointer % must advance by exactly one version (% -> %)',
      OLD.settlement_dimension_id, OLD.state_version, NEW.state_version USING ERRCODE = 'ME004';
  END IF;
  RETURN NEW;
END
$fn$;
-- +goose StatementEnd
