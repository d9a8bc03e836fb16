-- Provider cost processing (issue 14 item 4; ME-2; ADR-031 "Cost Work对五种
-- Availability都有严格收敛结果"): the provider_cost Work's facts and the cost
-- lane's coordination state. Blocks and their conflict evidence live in
-- metering.work_blocks (00004). Like every worker fact, a cost fact names
-- its exact attempt (work, number, token) and PostgreSQL refuses a token that
-- is not the Work's latest or a finished Work (ME003, 00004).
-- docs/metering.md explains every table and rule.
--
-- Custom SQLSTATEs: ME001 update/delete of an insert-only fact (existing);
--                   ME010 a cost lane coordination change that is not
--                         allowed (older generation, or a finished
--                         generation changing its result).

-- +goose Up
-- +goose StatementBegin

-- The cost lane keeps the attempt manifest quadruple its events carried, so
-- the worker's event-bound Gateway read names the exact slot key (rows of
-- earlier releases have none: their worker reads are refused as invalid).
ALTER TABLE metering.cost_lanes
  ADD COLUMN attempt_manifest_ref                       text,
  ADD COLUMN attempt_manifest_schema_version            text,
  ADD COLUMN attempt_manifest_digest_algorithm_version  text,
  ADD COLUMN attempt_manifest_digest                    text;

-- ProviderCostFact@1: at most one per provider_cost Work (insert-or-compare
-- on work_ref). The amount is exact numeric; it never feeds customer charging.
CREATE TABLE metering.provider_cost_facts (
  provider_cost_fact_ref         text        PRIMARY KEY,
  provider_cost_fact_digest      text        NOT NULL CHECK (provider_cost_fact_digest ~ '^[0-9a-f]{64}$'),
  work_ref                       text        NOT NULL UNIQUE,
  attempt_number                 bigint      NOT NULL,
  fencing_token                  uuid        NOT NULL,
  execution_attempt_id           uuid        NOT NULL,
  gateway_deployment_id          text        NOT NULL CHECK (gateway_deployment_id <> ''),
  source_evidence_dimension_key  text        NOT NULL CHECK (source_evidence_dimension_key <> ''),
  currency                       text        NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  amount                         numeric     NOT NULL CHECK (amount >= 0),
  fact_body                      text        NOT NULL,
  recorded_at                    timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (work_ref, attempt_number, fencing_token) REFERENCES metering.work_attempts (work_ref, attempt_number, fencing_token)
);
CREATE TRIGGER provider_cost_facts_latest_attempt BEFORE INSERT ON metering.provider_cost_facts
  FOR EACH ROW EXECUTE FUNCTION metering.require_latest_attempt('fact');
CREATE TRIGGER /* guard ME001.provider-cost-facts-insert-only */ provider_cost_facts_insert_only BEFORE UPDATE OR DELETE ON metering.provider_cost_facts
  FOR EACH ROW EXECUTE FUNCTION metering.reject_change();

-- ProviderCostAvailabilityProcessingFact@1: the one result of one
-- provider_cost Work. available_applied must name the Work's cost fact; no
-- other outcome may (a missing cost is never a zero cost).
CREATE TABLE metering.cost_processing_facts (
  processing_ref                 text        PRIMARY KEY,
  processing_digest              text        NOT NULL CHECK (processing_digest ~ '^[0-9a-f]{64}$'),
  work_ref                       text        NOT NULL UNIQUE,
  attempt_number                 bigint      NOT NULL,
  fencing_token                  uuid        NOT NULL,
  availability_state             text        NOT NULL CHECK (availability_state IN
    ('available', 'pending', 'not_reported', 'unavailable', 'conflicting')),
  processing_outcome             text        NOT NULL CHECK (processing_outcome IN
    ('available_applied', 'waiting_for_evidence', 'no_cost_evidence', 'reconciliation_required')),
  provider_cost_fact_ref         text        REFERENCES metering.provider_cost_facts,
  processing_body                text        NOT NULL,
  recorded_at                    timestamptz NOT NULL DEFAULT now(),
  CHECK ((processing_outcome = 'available_applied') = (provider_cost_fact_ref IS NOT NULL)),
  CHECK (processing_outcome = CASE availability_state
    WHEN 'available' THEN 'available_applied' WHEN 'pending' THEN 'waiting_for_evidence'
    WHEN 'conflicting' THEN 'reconciliation_required' ELSE 'no_cost_evidence' END),
  FOREIGN KEY (work_ref, attempt_number, fencing_token) REFERENCES metering.work_attempts (work_ref, attempt_number, fencing_token)
);
CREATE TRIGGER cost_processing_facts_latest_attempt BEFORE INSERT ON metering.cost_processing_facts
  FOR EACH ROW EXECUTE FUNCTION metering.require_latest_attempt('fact');
CREATE TRIGGER /* guard ME001.cost-processing-facts-insert-only */ cost_processing_facts_insert_only BEFORE UPDATE OR DELETE ON metering.cost_processing_facts
  FOR EACH ROW EXECUTE FUNCTION metering.reject_change();

-- The cost lane's coordination CAS: the state the worker committed for the
-- lane's generation (pending is implicit: no row, or a row of an older
-- generation). A finished generation's result never changes; a blocked one
-- may be blocked again or finish; generations never move backwards (ME010).
CREATE TABLE metering.cost_lane_coordination (
  execution_attempt_id           uuid        NOT NULL,
  gateway_deployment_id          text        NOT NULL,
  source_evidence_dimension_key  text        NOT NULL,
  work_generation                bigint      NOT NULL CHECK (work_generation >= 1),
  work_ref                       text        NOT NULL REFERENCES metering.input_works,
  state                          text        NOT NULL CHECK (state IN ('availability_processed', 'waiting_for_evidence',
    'no_cost_evidence', 'reconciliation_required', 'blocked_on_processing_conflict')),
  availability_state             text,
  state_reason_code              text,
  processing_ref                 text        REFERENCES metering.cost_processing_facts,
  processing_digest              text,
  finished_ref                   text,
  finished_digest                text,
  blocked_ref                    text        REFERENCES metering.work_blocks (blocked_ref),
  blocked_digest                 text,
  updated_at                     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (execution_attempt_id, gateway_deployment_id, source_evidence_dimension_key),
  FOREIGN KEY (execution_attempt_id, gateway_deployment_id, source_evidence_dimension_key)
    REFERENCES metering.cost_lanes (execution_attempt_id, gateway_deployment_id, source_evidence_dimension_key),
  CHECK ((state = 'blocked_on_processing_conflict') = (blocked_ref IS NOT NULL)),
  CHECK ((state = 'blocked_on_processing_conflict') = (processing_ref IS NULL AND finished_ref IS NULL))
);

CREATE FUNCTION metering.cost_coordination_guard() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF /* guard ME010.coordination-delete */ TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'metering: cost lane coordination is never deleted' USING ERRCODE = 'ME010';
  END IF;
  IF /* guard ME010.older-generation */ NEW.work_generation < OLD.work_generation THEN
    RAISE EXCEPTION 'metering: cost lane coordination of % moved to an older generation', OLD.execution_attempt_id
      USING ERRCODE = 'ME010';
  END IF;
  IF /* guard ME010.finished-generation-changed */ NEW.work_generation = OLD.work_generation AND OLD.state <> 'blocked_on_processing_conflict' THEN
    RAISE EXCEPTION 'metering: generation % of the cost lane of % is finished (%)', OLD.work_generation, OLD.execution_attempt_id, OLD.state
      USING ERRCODE = 'ME010';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER cost_lane_coordination_guard BEFORE UPDATE OR DELETE ON metering.cost_lane_coordination
  FOR EACH ROW EXECUTE FUNCTION metering.cost_coordination_guard();

GRANT EXECUTE ON FUNCTION metering.cost_coordination_guard() TO oceanway_metering;
REVOKE ALL ON metering.provider_cost_facts, metering.cost_processing_facts, metering.cost_lane_coordination FROM PUBLIC;
REVOKE ALL ON FUNCTION metering.cost_coordination_guard() FROM PUBLIC;
GRANT SELECT, INSERT ON metering.provider_cost_facts, metering.cost_processing_facts TO oceanway_metering;
GRANT SELECT, INSERT, UPDATE ON metering.cost_lane_coordination TO oceanway_metering;
-- +goose StatementEnd
