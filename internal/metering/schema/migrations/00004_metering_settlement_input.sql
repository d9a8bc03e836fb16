-- Metering worker facts (issue 14, Deliver items 2 and 3; ME-1):
-- EligibilityDecision, MeterEvent, the SettlementInputSnapshot@1 Current
-- chain per attempt × charge dimension with its current pointer, and
-- MeteringInputWorkAttemptBlocked@1 with its conflict evidence. Every fact a
-- worker writes carries (work_ref, attempt_number, fencing_token), a
-- foreign key to that exact attempt, and a trigger that refuses a token that
-- is not the Work's latest attempt or a Work that is already finished, so an
-- old fencing token never writes a business fact (ME003). docs/metering.md.
--
-- Custom SQLSTATEs: ME003 fenced: the token is not the Work's latest
--                         attempt, or the Work is already finished;
--                   ME004 settlement input chain: a state version that is
--                         not the next one, a pointer CAS that does not
--                         advance by exactly one, or a changed identity.

-- +goose Up
-- +goose StatementBegin
ALTER TABLE metering.work_attempts
  ADD CONSTRAINT work_attempts_token_key UNIQUE (work_ref, attempt_number, fencing_token);

-- The fencing token is bound in the database: a fact or finish names an
-- existing attempt (3-column FK) and that attempt must be the Work's latest.
-- Facts (TG_ARGV[0] = 'fact') also require the Work to be unfinished.
CREATE FUNCTION metering.require_latest_attempt() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  latest_number bigint;
  latest_token  uuid;
BEGIN
  SELECT attempt_number, fencing_token INTO latest_number, latest_token
  FROM metering.work_attempts WHERE work_ref = NEW.work_ref
  ORDER BY attempt_number DESC LIMIT 1;
  IF latest_number IS DISTINCT FROM NEW.attempt_number OR latest_token IS DISTINCT FROM NEW.fencing_token THEN
    RAISE EXCEPTION 'metering: attempt % of work % is not its latest attempt (latest %)', NEW.attempt_number, NEW.work_ref, latest_number
      USING ERRCODE = 'ME003';
  END IF;
  IF TG_ARGV[0] = 'fact' AND EXISTS (SELECT 1 FROM metering.work_finishes WHERE work_ref = NEW.work_ref) THEN
    RAISE EXCEPTION 'metering: work % is already finished', NEW.work_ref USING ERRCODE = 'ME003';
  END IF;
  RETURN NEW;
END
$fn$;

ALTER TABLE metering.work_finishes
  ADD CONSTRAINT work_finishes_attempt_token_fkey FOREIGN KEY (work_ref, attempt_number, fencing_token)
    REFERENCES metering.work_attempts (work_ref, attempt_number, fencing_token);
CREATE TRIGGER work_finishes_latest_attempt BEFORE INSERT ON metering.work_finishes
  FOR EACH ROW EXECUTE FUNCTION metering.require_latest_attempt('finish');

-- What the eligibility event carried besides the fact quadruple (tenant,
-- account, reservation, run, step, attempt manifest), kept so the worker can
-- make its event-bound bootstrap read; written once, never changed.
ALTER TABLE metering.input_fences ADD COLUMN eligibility_source text;
CREATE FUNCTION metering.eligibility_source_once() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF /* guard ME002.eligibility-source-changed */ OLD.eligibility_source IS NOT NULL AND NEW.eligibility_source IS DISTINCT FROM OLD.eligibility_source THEN
    RAISE EXCEPTION 'metering: the eligibility source of % never changes', OLD.execution_attempt_id USING ERRCODE = 'ME002';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER input_fences_source_once BEFORE UPDATE ON metering.input_fences
  FOR EACH ROW EXECUTE FUNCTION metering.eligibility_source_once();

-- EligibilityDecision: one per eligibility Work generation that applied.
CREATE TABLE metering.eligibility_decisions (
  decision_ref          text        PRIMARY KEY,
  decision_digest       text        NOT NULL CHECK (decision_digest ~ '^[0-9a-f]{64}$'),
  execution_attempt_id  uuid        NOT NULL,
  decision              text        NOT NULL CHECK (decision IN ('eligible', 'ineligible')),
  decision_rule_version text        NOT NULL,
  work_ref              text        NOT NULL UNIQUE,
  attempt_number        bigint      NOT NULL,
  fencing_token         uuid        NOT NULL,
  decision_body         text        NOT NULL,
  recorded_at           timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (work_ref, attempt_number, fencing_token) REFERENCES metering.work_attempts (work_ref, attempt_number, fencing_token)
);
CREATE INDEX eligibility_decisions_attempt ON metering.eligibility_decisions (execution_attempt_id);

-- MeterEvent: the measured usage of one charge dimension from one Gateway
-- evidence (content addressed; the same evidence measured again is the same
-- event, so a replayed generation does not add one).
CREATE TABLE metering.meter_events (
  meter_event_ref         text        PRIMARY KEY,
  meter_event_digest      text        NOT NULL UNIQUE CHECK (meter_event_digest ~ '^[0-9a-f]{64}$'),
  settlement_dimension_id uuid        NOT NULL,
  execution_attempt_id    uuid        NOT NULL,
  charge_dimension_key    text        NOT NULL,
  quantity                numeric     NOT NULL CHECK (quantity >= 0),
  unit                    text        NOT NULL,
  work_ref                text        NOT NULL,
  attempt_number          bigint      NOT NULL,
  fencing_token           uuid        NOT NULL,
  meter_event_body        text        NOT NULL,
  recorded_at             timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (work_ref, attempt_number, fencing_token) REFERENCES metering.work_attempts (work_ref, attempt_number, fencing_token)
);
CREATE INDEX meter_events_dimension ON metering.meter_events (settlement_dimension_id);

-- SettlementInputSnapshot@1: immutable, content addressed, dense state
-- versions from 1 per settlement dimension; version v > 1 references the
-- exact previous version (same dimension, v - 1, its ref).
CREATE TABLE metering.settlement_input_snapshots (
  settlement_dimension_id           uuid        NOT NULL,
  state_version                     bigint      NOT NULL CHECK (state_version >= 1),
  snapshot_ref                      text        NOT NULL UNIQUE,
  snapshot_schema_version           text        NOT NULL CHECK (snapshot_schema_version = '1'),
  snapshot_digest_algorithm_version text        NOT NULL CHECK (snapshot_digest_algorithm_version = 'jcs-sha256-v1'),
  snapshot_digest                   text        NOT NULL CHECK (snapshot_digest ~ '^[0-9a-f]{64}$'),
  content_digest                    text        NOT NULL CHECK (content_digest ~ '^[0-9a-f]{64}$'),
  predecessor_state_version         bigint,
  predecessor_snapshot_ref          text,
  billing_reservation_id            uuid        NOT NULL,
  run_id                            uuid        NOT NULL,
  run_step_id                       uuid        NOT NULL,
  execution_attempt_id              uuid        NOT NULL,
  charge_dimension_key              text        NOT NULL,
  target_net_amount                 numeric     NOT NULL CHECK (target_net_amount >= 0),
  reconciliation_state              text        NOT NULL CHECK (reconciliation_state IN ('not_required', 'awaiting_evidence', 'reconciliation_required')),
  work_ref                          text        NOT NULL,
  attempt_number                    bigint      NOT NULL,
  fencing_token                     uuid        NOT NULL,
  snapshot_body                     text        NOT NULL,
  recorded_at                       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (settlement_dimension_id, state_version),
  UNIQUE (settlement_dimension_id, state_version, snapshot_ref),
  CHECK ((state_version = 1 AND predecessor_state_version IS NULL AND predecessor_snapshot_ref IS NULL)
      OR (state_version > 1 AND predecessor_state_version = state_version - 1 AND predecessor_snapshot_ref IS NOT NULL)),
  FOREIGN KEY (settlement_dimension_id, predecessor_state_version, predecessor_snapshot_ref)
    REFERENCES metering.settlement_input_snapshots (settlement_dimension_id, state_version, snapshot_ref),
  FOREIGN KEY (work_ref, attempt_number, fencing_token) REFERENCES metering.work_attempts (work_ref, attempt_number, fencing_token)
);
CREATE INDEX settlement_input_snapshots_attempt ON metering.settlement_input_snapshots (execution_attempt_id);

-- The Current pointer of each settlement dimension: inserted at version 1,
-- then moved only by a CAS to exactly the next version of its own chain.
CREATE TABLE metering.settlement_input_current (
  settlement_dimension_id uuid        PRIMARY KEY,
  state_version           bigint      NOT NULL CHECK (state_version >= 1),
  snapshot_ref            text        NOT NULL,
  execution_attempt_id    uuid        NOT NULL,
  charge_dimension_key    text        NOT NULL,
  updated_at              timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (settlement_dimension_id, state_version, snapshot_ref)
    REFERENCES metering.settlement_input_snapshots (settlement_dimension_id, state_version, snapshot_ref)
);
CREATE INDEX settlement_input_current_attempt ON metering.settlement_input_current (execution_attempt_id);

-- (Triggers fire in name order: chain_next runs before latest_attempt.)
-- A snapshot is only ever the next version of its dimension: version 1 when
-- the dimension has no pointer, else the pointer's version + 1. With the
-- predecessor FK this refuses gaps and forks for every writer.
CREATE FUNCTION metering.settlement_input_next() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  cur bigint;
BEGIN
  SELECT state_version INTO cur FROM metering.settlement_input_current
  WHERE settlement_dimension_id = NEW.settlement_dimension_id;
  IF /* guard ME004.not-next-version */ NEW.state_version <> coalesce(cur, 0) + 1 THEN
    RAISE EXCEPTION 'metering: settlement input % version % is not the next (current %)', NEW.settlement_dimension_id, NEW.state_version, cur
      USING ERRCODE = 'ME004';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER settlement_input_snapshots_chain_next BEFORE INSERT ON metering.settlement_input_snapshots
  FOR EACH ROW EXECUTE FUNCTION metering.settlement_input_next();

CREATE FUNCTION metering.settlement_input_pointer_cas() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF TG_OP = 'INSERT' AND NEW.state_version <> 1 THEN
    RAISE EXCEPTION 'metering: a settlement input pointer starts at version 1' USING ERRCODE = 'ME004';
  END IF;
  IF TG_OP = 'UPDATE' AND (NEW.state_version <> OLD.state_version + 1
      OR NEW.settlement_dimension_id <> OLD.settlement_dimension_id
      OR NEW.execution_attempt_id <> OLD.execution_attempt_id
      OR NEW.charge_dimension_key <> OLD.charge_dimension_key) THEN
    RAISE EXCEPTION 'metering: settlement input pointer % must advance by exactly one version (% -> %)',
      OLD.settlement_dimension_id, OLD.state_version, NEW.state_version USING ERRCODE = 'ME004';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER settlement_input_current_cas BEFORE INSERT OR UPDATE ON metering.settlement_input_current
  FOR EACH ROW EXECUTE FUNCTION metering.settlement_input_pointer_cas();

-- MeteringInputWorkAttemptBlocked@1 and its conflict evidence: at most one
-- per attempt; the Work stays queued (active) and a later attempt retries.
CREATE TABLE metering.work_blocks (
  work_ref         text        NOT NULL,
  attempt_number   bigint      NOT NULL,
  fencing_token    uuid        NOT NULL,
  blocked_ref      text        NOT NULL UNIQUE,
  blocked_digest   text        NOT NULL CHECK (blocked_digest ~ '^[0-9a-f]{64}$'),
  blocked_body     text        NOT NULL,
  evidence_ref     text        NOT NULL UNIQUE,
  evidence_digest  text        NOT NULL CHECK (evidence_digest ~ '^[0-9a-f]{64}$'),
  evidence_body    text        NOT NULL,
  recorded_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (work_ref, attempt_number),
  FOREIGN KEY (work_ref, attempt_number, fencing_token) REFERENCES metering.work_attempts (work_ref, attempt_number, fencing_token)
);

CREATE TRIGGER eligibility_decisions_latest_attempt BEFORE INSERT ON metering.eligibility_decisions
  FOR EACH ROW EXECUTE FUNCTION metering.require_latest_attempt('fact');
CREATE TRIGGER meter_events_latest_attempt BEFORE INSERT ON metering.meter_events
  FOR EACH ROW EXECUTE FUNCTION metering.require_latest_attempt('fact');
CREATE TRIGGER settlement_input_snapshots_latest_attempt BEFORE INSERT ON metering.settlement_input_snapshots
  FOR EACH ROW EXECUTE FUNCTION metering.require_latest_attempt('fact');
CREATE TRIGGER work_blocks_latest_attempt BEFORE INSERT ON metering.work_blocks
  FOR EACH ROW EXECUTE FUNCTION metering.require_latest_attempt('fact');

CREATE TRIGGER /* guard ME001.eligibility-decisions-insert-only */ eligibility_decisions_insert_only BEFORE UPDATE OR DELETE ON metering.eligibility_decisions
  FOR EACH ROW EXECUTE FUNCTION metering.reject_change();
CREATE TRIGGER /* guard ME001.meter-events-insert-only */ meter_events_insert_only BEFORE UPDATE OR DELETE ON metering.meter_events
  FOR EACH ROW EXECUTE FUNCTION metering.reject_change();
CREATE TRIGGER /* guard ME001.settlement-input-snapshots-insert-only */ settlement_input_snapshots_insert_only BEFORE UPDATE OR DELETE ON metering.settlement_input_snapshots
  FOR EACH ROW EXECUTE FUNCTION metering.reject_change();
CREATE TRIGGER /* guard ME001.work-blocks-insert-only */ work_blocks_insert_only BEFORE UPDATE OR DELETE ON metering.work_blocks
  FOR EACH ROW EXECUTE FUNCTION metering.reject_change();
CREATE TRIGGER /* guard ME001.settlement-input-current-no-delete */ settlement_input_current_no_delete BEFORE DELETE ON metering.settlement_input_current
  FOR EACH ROW EXECUTE FUNCTION metering.reject_change();

REVOKE ALL ON metering.eligibility_decisions, metering.meter_events, metering.settlement_input_snapshots,
  metering.settlement_input_current, metering.work_blocks FROM PUBLIC;
REVOKE ALL ON FUNCTION metering.require_latest_attempt(), metering.eligibility_source_once(),
  metering.settlement_input_next(), metering.settlement_input_pointer_cas() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION metering.require_latest_attempt(), metering.eligibility_source_once(),
  metering.settlement_input_next(), metering.settlement_input_pointer_cas() TO oceanway_metering;
GRANT SELECT, INSERT ON metering.eligibility_decisions, metering.meter_events, metering.settlement_input_snapshots,
  metering.work_blocks TO oceanway_metering;
GRANT SELECT, INSERT, UPDATE (state_version, snapshot_ref, updated_at) ON metering.settlement_input_current TO oceanway_metering;
-- The worker appends metering.settlement-input.current-changed@1 (ME-1).
GRANT oceanway_producer TO oceanway_metering;

-- The claim queue knows each Work's lane, so a worker claims only the lanes
-- it processes with an index-backed read (unfinished Work of another lane
-- is never walked).
ALTER TABLE metering.pending_works ADD COLUMN lane_kind text;
UPDATE metering.pending_works p SET lane_kind = w.lane_kind FROM metering.input_works w WHERE w.work_ref = p.work_ref;
ALTER TABLE metering.pending_works ALTER COLUMN lane_kind SET NOT NULL,
  ADD CONSTRAINT pending_works_lane_kind_check CHECK (lane_kind IN ('eligibility_and_settlement_input', 'provider_cost'));
CREATE INDEX pending_works_lane_queued ON metering.pending_works (lane_kind, queued_at, work_ref);
-- +goose StatementEnd
