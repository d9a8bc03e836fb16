-- Metering input processor (schema metering, database metering): receipts,
-- the per-attempt input fence, eligibility-lane usage watermarks, provider-
-- cost lanes and immutable input Work generations (ADR-031 Metering; ME-1,
-- MET-*). docs/metering.md explains every table and rule.
--
-- Custom SQLSTATEs: ME001 update/delete of an insert-only fact;
--                   ME002 a fence revision, watermark or work generation
--                         moved backwards (lanes are monotonic).

-- +goose Up
-- +goose StatementBegin
CREATE SCHEMA metering;

COMMENT ON SCHEMA metering IS
  'OceanWay Metering: input processor receipts, input fences, lane watermarks, input work generations.';

CREATE FUNCTION metering.reject_change() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  RAISE EXCEPTION 'metering: % on %.% is forbidden (insert-only fact)', TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME
    USING ERRCODE = 'ME001';
END
$fn$;

-- MeteringInputProcessorConsumerReceipt@1: the inbox's standard receipt
-- table, key (consumer, event), body = RFC 8785 canonical bytes.
CREATE TABLE metering.input_receipts (
  consumer_name                           text        NOT NULL CHECK (consumer_name = 'metering_input_processor_consumer'),
  event_id                                uuid        NOT NULL,
  event_type                              text        NOT NULL CHECK (event_type IN
    ('execution.attempt-eligibility.finalized@1', 'gateway.evidence-availability.current-changed@1')),
  event_schema_version                    text        NOT NULL CHECK (event_schema_version = '1'),
  event_envelope_digest_algorithm_version text        NOT NULL CHECK (event_envelope_digest_algorithm_version = 'jcs-sha256-v1'),
  event_envelope_sha256                   text        NOT NULL CHECK (event_envelope_sha256 ~ '^[0-9a-f]{64}$'),
  receipt_ref                             text        NOT NULL UNIQUE,
  receipt_schema_version                  text        NOT NULL CHECK (receipt_schema_version = '1'),
  receipt_digest_algorithm_version        text        NOT NULL CHECK (receipt_digest_algorithm_version = 'jcs-sha256-v1'),
  receipt_digest                          text        NOT NULL CHECK (receipt_digest ~ '^[0-9a-f]{64}$'),
  receipt_body                            text        NOT NULL,
  recorded_at                             timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer_name, event_id)
);
CREATE TRIGGER /* guard ME001.input-receipts-insert-only */ input_receipts_insert_only BEFORE UPDATE OR DELETE ON metering.input_receipts
  FOR EACH ROW EXECUTE FUNCTION metering.reject_change();

-- The input fence of one attempt: every input processor transaction of the
-- attempt (both lanes) locks this row FOR UPDATE first. It carries the
-- eligibility lane: fence revision (one per advancing input), the observed
-- eligibility fact (at most one per attempt), the latest work generation
-- and the lane's trigger digest.
CREATE TABLE metering.input_fences (
  execution_attempt_id                  uuid        PRIMARY KEY,
  eligibility_fence_revision            bigint      NOT NULL DEFAULT 0 CHECK (eligibility_fence_revision >= 0),
  eligibility_fact_ref                  text,
  eligibility_fact_schema_version       text,
  eligibility_fact_digest_algorithm_version text,
  eligibility_fact_digest               text,
  dispatch_disposition                  text CHECK (dispatch_disposition IN ('dispatched', 'not_dispatched')),
  latest_eligibility_work_generation    bigint      NOT NULL DEFAULT 0 CHECK (latest_eligibility_work_generation >= 0),
  eligibility_trigger_digest            text,
  created_at                            timestamptz NOT NULL DEFAULT now(),
  updated_at                            timestamptz NOT NULL DEFAULT now(),
  CHECK ((eligibility_fact_ref IS NULL) = (dispatch_disposition IS NULL))
);

-- Eligibility-lane usage watermarks: the highest gateway usage availability
-- state version observed per (attempt, deployment, dimension).
CREATE TABLE metering.usage_watermarks (
  execution_attempt_id           uuid   NOT NULL REFERENCES metering.input_fences,
  gateway_deployment_id          text   NOT NULL,
  evidence_dimension_key         text   NOT NULL,
  state_version                  bigint NOT NULL CHECK (state_version >= 1),
  current_availability_ref       text   NOT NULL,
  current_availability_digest    text   NOT NULL,
  availability_state             text   NOT NULL,
  PRIMARY KEY (execution_attempt_id, gateway_deployment_id, evidence_dimension_key)
);

-- Provider-cost lanes: one per (attempt, deployment, source dimension).
CREATE TABLE metering.cost_lanes (
  execution_attempt_id           uuid   NOT NULL REFERENCES metering.input_fences,
  gateway_deployment_id          text   NOT NULL,
  source_evidence_dimension_key  text   NOT NULL,
  fence_revision                 bigint NOT NULL CHECK (fence_revision >= 1),
  state_version                  bigint NOT NULL CHECK (state_version >= 1),
  current_availability_ref       text   NOT NULL,
  current_availability_digest    text   NOT NULL,
  availability_state             text   NOT NULL,
  latest_work_generation         bigint NOT NULL CHECK (latest_work_generation >= 1),
  trigger_digest                 text   NOT NULL,
  PRIMARY KEY (execution_attempt_id, gateway_deployment_id, source_evidence_dimension_key)
);

-- Immutable input Work: one row per (attempt, lane, generation); a new
-- current input schedules a new generation, an old one is never rewritten.
CREATE TABLE metering.input_works (
  work_ref                       text        PRIMARY KEY,
  work_schema_version            text        NOT NULL CHECK (work_schema_version = '1'),
  work_digest_algorithm_version  text        NOT NULL CHECK (work_digest_algorithm_version = 'jcs-sha256-v1'),
  work_digest                    text        NOT NULL CHECK (work_digest ~ '^[0-9a-f]{64}$'),
  execution_attempt_id           uuid        NOT NULL REFERENCES metering.input_fences,
  lane_kind                      text        NOT NULL CHECK (lane_kind IN ('eligibility_and_settlement_input', 'provider_cost')),
  gateway_deployment_id          text        NOT NULL DEFAULT '',
  source_evidence_dimension_key  text        NOT NULL DEFAULT '',
  work_generation                bigint      NOT NULL CHECK (work_generation >= 1),
  operation_id                   uuid        NOT NULL UNIQUE,
  trigger_digest                 text        NOT NULL,
  work_body                      text        NOT NULL,
  created_at                     timestamptz NOT NULL DEFAULT now(),
  UNIQUE (execution_attempt_id, lane_kind, gateway_deployment_id, source_evidence_dimension_key, work_generation)
);
CREATE TRIGGER /* guard ME001.input-works-insert-only */ input_works_insert_only BEFORE UPDATE OR DELETE ON metering.input_works
  FOR EACH ROW EXECUTE FUNCTION metering.reject_change();

-- Lanes are monotonic: no fence revision, watermark or generation moves
-- backwards, and an observed eligibility fact never changes (ME002).
CREATE FUNCTION metering.forward_only() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF TG_TABLE_NAME = 'input_fences' THEN
    IF NEW.eligibility_fence_revision < OLD.eligibility_fence_revision
       OR NEW.latest_eligibility_work_generation < OLD.latest_eligibility_work_generation
       OR (OLD.eligibility_fact_ref IS NOT NULL AND NEW.eligibility_fact_ref IS DISTINCT FROM OLD.eligibility_fact_ref)
       OR (OLD.eligibility_fact_digest IS NOT NULL AND NEW.eligibility_fact_digest IS DISTINCT FROM OLD.eligibility_fact_digest) THEN
      RAISE EXCEPTION 'metering: input fence % moved backwards or changed its eligibility fact', OLD.execution_attempt_id
        USING ERRCODE = 'ME002';
    END IF;
  ELSIF TG_TABLE_NAME = 'usage_watermarks' THEN
    IF NEW.state_version <= OLD.state_version THEN
      RAISE EXCEPTION 'metering: usage watermark of % did not advance (% -> %)', OLD.execution_attempt_id, OLD.state_version, NEW.state_version
        USING ERRCODE = 'ME002';
    END IF;
  ELSIF TG_TABLE_NAME = 'cost_lanes' THEN
    IF NEW.state_version <= OLD.state_version OR NEW.fence_revision <= OLD.fence_revision
       OR NEW.latest_work_generation <= OLD.latest_work_generation THEN
      RAISE EXCEPTION 'metering: cost lane of % did not advance', OLD.execution_attempt_id
        USING ERRCODE = 'ME002';
    END IF;
  END IF;
  IF TG_OP = 'UPDATE' AND NEW.execution_attempt_id <> OLD.execution_attempt_id THEN
    RAISE EXCEPTION 'metering: lane identity is immutable' USING ERRCODE = 'ME002';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER input_fences_forward_only BEFORE UPDATE ON metering.input_fences
  FOR EACH ROW EXECUTE FUNCTION metering.forward_only();
CREATE TRIGGER usage_watermarks_forward_only BEFORE UPDATE ON metering.usage_watermarks
  FOR EACH ROW EXECUTE FUNCTION metering.forward_only();
CREATE TRIGGER cost_lanes_forward_only BEFORE UPDATE ON metering.cost_lanes
  FOR EACH ROW EXECUTE FUNCTION metering.forward_only();
CREATE TRIGGER /* guard ME001.input-fences-no-delete */ fences_no_delete BEFORE DELETE ON metering.input_fences
  FOR EACH ROW EXECUTE FUNCTION metering.reject_change();
CREATE TRIGGER /* guard ME001.usage-watermarks-no-delete */ usage_watermarks_no_delete BEFORE DELETE ON metering.usage_watermarks
  FOR EACH ROW EXECUTE FUNCTION metering.reject_change();
CREATE TRIGGER /* guard ME001.cost-lanes-no-delete */ cost_lanes_no_delete BEFORE DELETE ON metering.cost_lanes
  FOR EACH ROW EXECUTE FUNCTION metering.reject_change();
-- +goose StatementEnd
