-- An old Work generation never writes a business fact (review finding 2;
-- outbox-publisher "旧Token不能写任何业务Fact或推进新Lane"). 00004's
-- require_latest_attempt only bound the token to the Work's latest attempt:
-- generation 1 claimed after generation 2 was scheduled still passed, and a
-- fact's execution_attempt_id was not tied to its Work. This replaces the
-- function (same name, same triggers) so that, for every fact and every
-- non-superseded finish, the Work must be its lane's latest generation
-- (input_fences.latest_eligibility_work_generation for the eligibility
-- lane, cost_lanes.latest_work_generation for a provider-cost lane), a
-- column execution_attempt_id must be the Work's attempt, and a lane given
-- as TG_ARGV[1] must be the Work's lane. The writer holds the input fence
-- lock, under which the consumer moves generations, so the read is stable.
--
-- Custom SQLSTATE: ME003 (as 00004) fenced.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION metering.require_latest_attempt() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  latest_number bigint;
  latest_token  uuid;
  w             metering.input_works%ROWTYPE;
  lane_latest   bigint;
  row_attempt   text;
BEGIN
  SELECT attempt_number, fencing_token INTO latest_number, latest_token
  FROM metering.work_attempts WHERE work_ref = NEW.work_ref
  ORDER BY attempt_number DESC LIMIT 1;
  IF /* guard ME003.not-latest-attempt */ latest_number IS DISTINCT FROM NEW.attempt_number OR latest_token IS DISTINCT FROM NEW.fencing_token THEN
    RAISE EXCEPTION 'metering: attempt % of work % is not its latest attempt (latest %)', NEW.attempt_number, NEW.work_ref, latest_number
      USING ERRCODE = 'ME003';
  END IF;
  IF /* guard ME003.work-finished */ TG_ARGV[0] = 'fact' AND EXISTS (SELECT 1 FROM metering.work_finishes WHERE work_ref = NEW.work_ref) THEN
    RAISE EXCEPTION 'metering: work % is already finished', NEW.work_ref USING ERRCODE = 'ME003';
  END IF;
  -- The superseded finish is exactly what an old generation may write.
  IF TG_ARGV[0] = 'finish' AND to_jsonb(NEW) ->> 'outcome_state' = 'superseded' THEN
    RETURN NEW;
  END IF;
  SELECT * INTO w FROM metering.input_works WHERE work_ref = NEW.work_ref;
  IF /* guard ME003.wrong-lane */ TG_NARGS > 1 AND w.lane_kind IS DISTINCT FROM TG_ARGV[1] THEN
    RAISE EXCEPTION 'metering: work % of lane % cannot write a % fact', NEW.work_ref, w.lane_kind, TG_ARGV[1]
      USING ERRCODE = 'ME003';
  END IF;
  IF w.lane_kind = 'eligibility_and_settlement_input' THEN
    SELECT latest_eligibility_work_generation INTO lane_latest
    FROM metering.input_fences WHERE execution_attempt_id = w.execution_attempt_id;
  ELSE
    SELECT latest_work_generation INTO lane_latest
    FROM metering.cost_lanes WHERE execution_attempt_id = w.execution_attempt_id
      AND gateway_deployment_id = w.gateway_deployment_id AND source_evidence_dimension_key = w.source_evidence_dimension_key;
  END IF;
  IF /* guard ME003.not-latest-generation */ lane_latest IS DISTINCT FROM w.work_generation THEN
    RAISE EXCEPTION 'metering: work % is generation % of its lane, the latest is %', NEW.work_ref, w.work_generation, lane_latest
      USING ERRCODE = 'ME003';
  END IF;
  row_attempt := to_jsonb(NEW) ->> 'execution_attempt_id';
  IF /* guard ME003.other-execution-attempt */ row_attempt IS NOT NULL AND row_attempt::uuid IS DISTINCT FROM w.execution_attempt_id THEN
    RAISE EXCEPTION 'metering: a fact of attempt % written by work % of attempt %', row_attempt, NEW.work_ref, w.execution_attempt_id
      USING ERRCODE = 'ME003';
  END IF;
  RETURN NEW;
END
$fn$;

-- Decisions, MeterEvents and settlement input snapshots are eligibility-lane facts.
DROP TRIGGER eligibility_decisions_latest_attempt ON metering.eligibility_decisions;
CREATE TRIGGER eligibility_decisions_latest_attempt BEFORE INSERT ON metering.eligibility_decisions
  FOR EACH ROW EXECUTE FUNCTION metering.require_latest_attempt('fact', 'eligibility_and_settlement_input');
DROP TRIGGER meter_events_latest_attempt ON metering.meter_events;
CREATE TRIGGER meter_events_latest_attempt BEFORE INSERT ON metering.meter_events
  FOR EACH ROW EXECUTE FUNCTION metering.require_latest_attempt('fact', 'eligibility_and_settlement_input');
DROP TRIGGER settlement_input_snapshots_latest_attempt ON metering.settlement_input_snapshots;
CREATE TRIGGER settlement_input_snapshots_latest_attempt BEFORE INSERT ON metering.settlement_input_snapshots
  FOR EACH ROW EXECUTE FUNCTION metering.require_latest_attempt('fact', 'eligibility_and_settlement_input');
-- +goose StatementEnd
