-- Billing settlement catch-up and post-finality transitions (schema billing,
-- database core; ADR-031 "终局后变化采用追加式 Transition", the outbox
-- document's catch-up receipt rules; BI-2, BI-3, BSC-*). docs/billing-catch-up.md
-- explains every table and rule.
--
-- Custom SQLSTATEs (class BC, billing catch-up):
--   BC001 update/delete of an insert-only fact (receipt, Work, transition, exposure)
--   BC003 a fence change outside its graph (revision +1, state revision and
--         generation +0/+1 together, identity frozen, settled amount never rises)
--   BC004 caught_up while the watermark is ahead of the evaluated input
--   BC005 a late_settlement_exposure transition without its exposure at commit

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION billing.catch_up_reject_change() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  RAISE EXCEPTION 'billing: % on %.% is forbidden (insert-only fact)', TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME
    USING ERRCODE = 'BC001';
END
$fn$;

-- BillingSettlementCatchUpConsumerReceipt@1: the inbox's standard receipt
-- table, key (consumer, event), body = RFC 8785 canonical bytes.
CREATE TABLE billing.settlement_catch_up_receipts (
  consumer_name                           text        NOT NULL CHECK (consumer_name = 'billing_settlement_catch_up_consumer'),
  event_id                                uuid        NOT NULL,
  event_type                              text        NOT NULL CHECK (event_type = 'metering.settlement-input.current-changed@1'),
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
CREATE TRIGGER /* guard BC001.receipts-insert-only */ settlement_catch_up_receipts_insert_only BEFORE UPDATE OR DELETE ON billing.settlement_catch_up_receipts
  FOR EACH ROW EXECUTE FUNCTION billing.catch_up_reject_change();

-- The dimension's SettlementInputWakeupWatermark is billing.settlement_input_watermarks
-- (00001, monotonic by its guard): one per dimension before and after
-- finalization; the catch-up consumer is its writer.

-- BillingSettlementCatchUpWork@1: immutable generations, dense per
-- dimension (each generation > 1 references its predecessor), one
-- validation operation each.
CREATE TABLE billing.settlement_catch_up_works (
  settlement_dimension_id           uuid        NOT NULL,
  work_generation                   bigint      NOT NULL CHECK (work_generation >= 1),
  previous_generation               bigint      GENERATED ALWAYS AS (NULLIF(work_generation - 1, 0)) STORED,
  work_ref                          text        NOT NULL UNIQUE,
  work_schema_version               text        NOT NULL CHECK (work_schema_version = '1'),
  work_digest_algorithm_version     text        NOT NULL CHECK (work_digest_algorithm_version = 'jcs-sha256-v1'),
  work_digest                       text        NOT NULL CHECK (work_digest ~ '^[0-9a-f]{64}$'),
  validation_operation_id           uuid        NOT NULL UNIQUE,
  work_cause                        text        NOT NULL CHECK (work_cause IN ('finalization_committed', 'settlement_input_observed', 'transition_successor')),
  fence_revision                    bigint      NOT NULL CHECK (fence_revision >= 1),
  settlement_state_revision         bigint      NOT NULL CHECK (settlement_state_revision >= 1),
  to_verify_state_version           bigint      NOT NULL CHECK (to_verify_state_version >= 1),
  work_body                         text        NOT NULL,
  created_at                        timestamptz NOT NULL,
  PRIMARY KEY (settlement_dimension_id, work_generation),
  FOREIGN KEY (settlement_dimension_id, previous_generation)
    REFERENCES billing.settlement_catch_up_works (settlement_dimension_id, work_generation)
);
CREATE TRIGGER /* guard BC001.works-insert-only */ settlement_catch_up_works_insert_only BEFORE UPDATE OR DELETE ON billing.settlement_catch_up_works
  FOR EACH ROW EXECUTE FUNCTION billing.catch_up_reject_change();

-- BillingSettlementTransition@1: append-only, contiguous per dimension:
-- the primary key (dimension, from) means no step is applied twice; every
-- from > 1 references the transition that produced it; to = from + 1.
CREATE TABLE billing.settlement_transitions (
  settlement_dimension_id           uuid        NOT NULL,
  from_settlement_state_revision    bigint      NOT NULL CHECK (from_settlement_state_revision >= 1),
  to_settlement_state_revision      bigint      NOT NULL,
  previous_to_revision              bigint      GENERATED ALWAYS AS (NULLIF(from_settlement_state_revision, 1)) STORED,
  billing_reservation_id            uuid        NOT NULL,
  billing_account_id                uuid        NOT NULL,
  transition_ref                    text        NOT NULL UNIQUE,
  transition_schema_version         text        NOT NULL CHECK (transition_schema_version = '1'),
  transition_digest_algorithm_version text      NOT NULL CHECK (transition_digest_algorithm_version = 'jcs-sha256-v1'),
  transition_digest                 text        NOT NULL CHECK (transition_digest ~ '^[0-9a-f]{64}$'),
  transition_kind                   text        NOT NULL CHECK (transition_kind IN ('refund', 'adjustment', 'late_settlement_exposure')),
  settled_amount_before             numeric     NOT NULL CHECK (settled_amount_before >= 0),
  settled_amount_after              numeric     NOT NULL CHECK (settled_amount_after >= 0),
  transition_amount                 numeric     NOT NULL CHECK (transition_amount > 0),
  settlement_input_state_version    bigint      NOT NULL CHECK (settlement_input_state_version >= 1),
  validation_operation_id           uuid        NOT NULL UNIQUE,
  work_generation                   bigint      NOT NULL,
  event_id                          uuid        NOT NULL UNIQUE,
  event_envelope_sha256             text        NOT NULL CHECK (event_envelope_sha256 ~ '^[0-9a-f]{64}$'),
  transition_body                   text        NOT NULL,
  committed_at                      timestamptz NOT NULL,
  PRIMARY KEY (settlement_dimension_id, from_settlement_state_revision),
  UNIQUE (settlement_dimension_id, to_settlement_state_revision),
  UNIQUE (settlement_dimension_id, to_settlement_state_revision, transition_kind),
  UNIQUE (settlement_dimension_id, work_generation),
  CHECK (to_settlement_state_revision = from_settlement_state_revision + 1),
  -- The amounts add up for the kind; an exposure never changes what is settled.
  CHECK (CASE transition_kind
           WHEN 'refund' THEN settled_amount_after = settled_amount_before - transition_amount
           WHEN 'adjustment' THEN settled_amount_after = settled_amount_before + transition_amount
           ELSE settled_amount_after = settled_amount_before END),
  FOREIGN KEY (settlement_dimension_id, previous_to_revision)
    REFERENCES billing.settlement_transitions (settlement_dimension_id, to_settlement_state_revision),
  FOREIGN KEY (settlement_dimension_id, work_generation)
    REFERENCES billing.settlement_catch_up_works (settlement_dimension_id, work_generation)
);
CREATE TRIGGER /* guard BC001.transitions-insert-only */ settlement_transitions_insert_only BEFORE UPDATE OR DELETE ON billing.settlement_transitions
  FOR EACH ROW EXECUTE FUNCTION billing.catch_up_reject_change();

-- LateSettlementExposure@1: one per late_settlement_exposure transition,
-- open and blocked (reconcile_before_charge): never charged automatically.
CREATE TABLE billing.late_settlement_exposures (
  late_settlement_exposure_id       uuid        PRIMARY KEY,
  settlement_dimension_id           uuid        NOT NULL,
  settlement_state_revision         bigint      NOT NULL,
  transition_kind                   text        NOT NULL DEFAULT 'late_settlement_exposure' CHECK (transition_kind = 'late_settlement_exposure'),
  billing_reservation_id            uuid        NOT NULL,
  billing_account_id                uuid        NOT NULL,
  exposure_ref                      text        NOT NULL UNIQUE,
  exposure_schema_version           text        NOT NULL CHECK (exposure_schema_version = '1'),
  exposure_digest_algorithm_version text        NOT NULL CHECK (exposure_digest_algorithm_version = 'jcs-sha256-v1'),
  exposure_digest                   text        NOT NULL CHECK (exposure_digest ~ '^[0-9a-f]{64}$'),
  exposure_amount                   numeric     NOT NULL CHECK (exposure_amount > 0),
  exposure_state                    text        NOT NULL CHECK (exposure_state = 'open'),
  automatic_charge                  text        NOT NULL CHECK (automatic_charge = 'blocked'),
  exposure_body                     text        NOT NULL,
  recorded_at                       timestamptz NOT NULL,
  UNIQUE (settlement_dimension_id, settlement_state_revision),
  FOREIGN KEY (settlement_dimension_id, settlement_state_revision, transition_kind)
    REFERENCES billing.settlement_transitions (settlement_dimension_id, to_settlement_state_revision, transition_kind)
);
CREATE TRIGGER /* guard BC001.exposures-insert-only */ late_settlement_exposures_insert_only BEFORE UPDATE OR DELETE ON billing.late_settlement_exposures
  FOR EACH ROW EXECUTE FUNCTION billing.catch_up_reject_change();
CREATE INDEX late_settlement_exposures_reservation ON billing.late_settlement_exposures (billing_reservation_id);

-- An exposure transition commits with its exposure, or not at all.
CREATE FUNCTION billing.catch_up_exposure_present() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF /* guard BC005.exposure-missing */ NOT EXISTS (SELECT 1 FROM billing.late_settlement_exposures e
                 WHERE e.settlement_dimension_id = NEW.settlement_dimension_id
                   AND e.settlement_state_revision = NEW.to_settlement_state_revision) THEN
    RAISE EXCEPTION 'billing: late_settlement_exposure transition %/% has no exposure',
      NEW.settlement_dimension_id, NEW.to_settlement_state_revision USING ERRCODE = 'BC005';
  END IF;
  RETURN NULL;
END
$fn$;
CREATE CONSTRAINT TRIGGER settlement_transitions_exposure_present AFTER INSERT ON billing.settlement_transitions
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.transition_kind = 'late_settlement_exposure')
  EXECUTE FUNCTION billing.catch_up_exposure_present();

-- BillingSettlementCatchUpFence@1 (current revision): one per finalized
-- dimension, created by the successful finalization's transaction. It
-- always has an active Work generation; the settled state revision only
-- advances with a transition that has that to revision.
CREATE TABLE billing.settlement_catch_up_fences (
  settlement_dimension_id           uuid        PRIMARY KEY,
  billing_reservation_id            uuid        NOT NULL,
  billing_account_id                uuid        NOT NULL,
  run_id                            uuid        NOT NULL,
  run_step_id                       uuid        NOT NULL,
  execution_attempt_id              uuid        NOT NULL,
  charge_dimension_key              text        NOT NULL,
  economic_identity                 text        NOT NULL,  -- canonical SettlementEconomicIdentity@1
  tenant_kind                       text        NOT NULL,
  tenant_id                         uuid        NOT NULL,
  workspace_id                      uuid        NOT NULL,
  project_id                        uuid,
  correlation_id                    uuid        NOT NULL,
  finalization_committed_ref        text        NOT NULL,
  finalization_committed_schema_version text    NOT NULL,
  finalization_committed_digest_algorithm_version text NOT NULL,
  finalization_committed_digest     text        NOT NULL,
  finalization_event_id             uuid        NOT NULL,
  fence_revision                    bigint      NOT NULL CHECK (fence_revision >= 1),
  settlement_state_revision         bigint      NOT NULL CHECK (settlement_state_revision >= 1),
  state_transition_revision         bigint      GENERATED ALWAYS AS (NULLIF(settlement_state_revision, 1)) STORED,
  settled_amount                    numeric     NOT NULL CHECK (settled_amount >= 0),
  last_evaluated_ref                text        NOT NULL,
  last_evaluated_schema_version     text        NOT NULL,
  last_evaluated_digest_algorithm_version text  NOT NULL,
  last_evaluated_digest             text        NOT NULL,
  last_evaluated_state_version      bigint      NOT NULL CHECK (last_evaluated_state_version >= 1),
  last_event_id                     uuid        NOT NULL,  -- causation of the next transition
  coordination_state                text        NOT NULL CHECK (coordination_state IN ('pending_verification', 'caught_up', 'blocked_on_owner_conflict')),
  active_work_generation            bigint      NOT NULL CHECK (active_work_generation >= 1),
  caught_up_receipt_ref             text,
  caught_up_receipt_schema_version  text,
  caught_up_receipt_digest_algorithm_version text,
  caught_up_receipt_digest          text,
  created_at                        timestamptz NOT NULL,
  updated_at                        timestamptz NOT NULL,
  CHECK ((coordination_state = 'caught_up') = (caught_up_receipt_ref IS NOT NULL)),
  FOREIGN KEY (settlement_dimension_id, active_work_generation)
    REFERENCES billing.settlement_catch_up_works (settlement_dimension_id, work_generation) DEFERRABLE INITIALLY DEFERRED,
  FOREIGN KEY (settlement_dimension_id, state_transition_revision)
    REFERENCES billing.settlement_transitions (settlement_dimension_id, to_settlement_state_revision) DEFERRABLE INITIALLY DEFERRED
);
CREATE INDEX settlement_catch_up_fences_reservation ON billing.settlement_catch_up_fences (billing_reservation_id);
-- The worker's claim reads only fences waiting for verification.
CREATE INDEX settlement_catch_up_fences_pending ON billing.settlement_catch_up_fences (updated_at, settlement_dimension_id)
  WHERE coordination_state = 'pending_verification';

CREATE FUNCTION billing.catch_up_fence_forward() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  wm billing.settlement_input_watermarks;
BEGIN
  IF (NEW.settlement_dimension_id, NEW.billing_reservation_id, NEW.billing_account_id, NEW.run_id, NEW.run_step_id,
      NEW.execution_attempt_id, NEW.charge_dimension_key, NEW.economic_identity, NEW.finalization_committed_ref,
      NEW.finalization_committed_digest, NEW.finalization_event_id, NEW.created_at)
     IS DISTINCT FROM
     (OLD.settlement_dimension_id, OLD.billing_reservation_id, OLD.billing_account_id, OLD.run_id, OLD.run_step_id,
      OLD.execution_attempt_id, OLD.charge_dimension_key, OLD.economic_identity, OLD.finalization_committed_ref,
      OLD.finalization_committed_digest, OLD.finalization_event_id, OLD.created_at) THEN
    RAISE EXCEPTION 'billing: catch-up fence % identity is frozen', OLD.settlement_dimension_id USING ERRCODE = 'BC003';
  END IF;
  IF NEW.fence_revision <> OLD.fence_revision + 1
     OR NEW.settlement_state_revision NOT IN (OLD.settlement_state_revision, OLD.settlement_state_revision + 1)
     OR NEW.active_work_generation NOT IN (OLD.active_work_generation, OLD.active_work_generation + 1)
     -- a transition always comes with its successor Work
     OR (NEW.settlement_state_revision > OLD.settlement_state_revision AND NEW.active_work_generation = OLD.active_work_generation)
     OR NEW.last_evaluated_state_version < OLD.last_evaluated_state_version
     -- first phase: no automatic charge after release (reconcile_before_charge)
     OR NEW.settled_amount > OLD.settled_amount THEN
    RAISE EXCEPTION 'billing: catch-up fence % change outside its graph (revision % -> %, state % -> %, generation % -> %)',
      OLD.settlement_dimension_id, OLD.fence_revision, NEW.fence_revision, OLD.settlement_state_revision,
      NEW.settlement_state_revision, OLD.active_work_generation, NEW.active_work_generation USING ERRCODE = 'BC003';
  END IF;
  IF NEW.coordination_state = 'caught_up' THEN
    SELECT * INTO wm FROM billing.settlement_input_watermarks
    WHERE billing_reservation_id = NEW.billing_reservation_id AND settlement_dimension_id = NEW.settlement_dimension_id;
    IF FOUND AND wm.settlement_input_state_version > NEW.last_evaluated_state_version THEN
      RAISE EXCEPTION 'billing: catch-up fence % cannot be caught_up: watermark % is ahead of %',
        NEW.settlement_dimension_id, wm.settlement_input_state_version, NEW.last_evaluated_state_version USING ERRCODE = 'BC004';
    END IF;
  END IF;
  RETURN NEW;
END
$fn$;
CREATE FUNCTION billing.catch_up_fence_start() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF /* guard BC003.fence-start */ NEW.fence_revision <> 1 OR NEW.settlement_state_revision <> 1 OR NEW.active_work_generation <> 1
     OR NEW.coordination_state <> 'pending_verification' OR NEW.last_event_id <> NEW.finalization_event_id THEN
    RAISE EXCEPTION 'billing: a catch-up fence starts at revision 1, state revision 1, generation 1, pending_verification'
      USING ERRCODE = 'BC003';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER settlement_catch_up_fences_start BEFORE INSERT ON billing.settlement_catch_up_fences
  FOR EACH ROW EXECUTE FUNCTION billing.catch_up_fence_start();
CREATE TRIGGER settlement_catch_up_fences_forward BEFORE UPDATE ON billing.settlement_catch_up_fences
  FOR EACH ROW EXECUTE FUNCTION billing.catch_up_fence_forward();
CREATE TRIGGER /* guard BC001.fences-no-delete */ settlement_catch_up_fences_no_delete BEFORE DELETE ON billing.settlement_catch_up_fences
  FOR EACH ROW EXECUTE FUNCTION billing.catch_up_reject_change();
-- +goose StatementEnd
