-- Finality guards (issue 30; ADR-031 "a receipt's current only for the
-- head", "one event per chain revision", "facts only for the state they
-- describe", "absorbing terminal states"; ME-1). Before this migration the
-- least-privileged role oceanway_metering could commit, each in its own
-- transaction: a validation receipt saying `current` for a version the
-- pointer had already left, and a second
-- metering.settlement-input.current-changed@1 for a dimension and revision
-- that already had one. PostgreSQL is now the second guard for these rules
-- and for the ones of the same kind below. Every check is a primary-key or
-- unique-index lookup: nothing reads more as history grows.
-- docs/metering.md ("Finality guards") lists them with their tests.
--
-- Custom SQLSTATEs (new):
--   ME006 a validation receipt whose answer is not the dimension's Current
--         pointer at its insert (current_state_version <> pointer version).
--   ME007 a validation receipt whose body does not say what its columns and
--         the chain say (ref, digest, operation, purpose, dimension,
--         validated and current five-tuples, result).
--   ME008 at COMMIT, a metering.settlement-input.current-changed@1 event that
--         no stored snapshot version names (settlement_input_snapshots.event_id,
--         unique), or whose aggregate, revision or payload is not that
--         snapshot's: one event per chain revision, each backed by its CAS
--         (an event adopted from a legacy outbox, OB-BOOT-1, needs none).
--   ME009 at COMMIT, an attempt started, or a queue row inserted, for a Work
--         that is already finished (a finish is absorbing), or an attempt
--         for a Work that is not queued.
--   ME011 at COMMIT, a `superseded` finish of a Work whose lane has no newer
--         generation.
-- Existing codes reused: ME001 now also refuses TRUNCATE of every metering
-- table (statement triggers, for every role, the superuser included);
-- ME005 (00006) now finds the snapshot's event by its event id.

-- +goose Up
-- +goose StatementBegin

----------------------------------------------------------------------------
-- TRUNCATE: BEFORE UPDATE OR DELETE row triggers never fire for TRUNCATE.
-- Every metering table refuses it (ME001), the way the outbox tables do
-- (outbox 00002). pending_works too: truncating the queue would drop
-- unfinished Work without a finish.

CREATE TRIGGER /* guard ME001.input-receipts-no-truncate */ input_receipts_no_truncate BEFORE TRUNCATE ON metering.input_receipts
  FOR EACH STATEMENT EXECUTE FUNCTION metering.reject_change();
CREATE TRIGGER /* guard ME001.input-fences-no-truncate */ input_fences_no_truncate BEFORE TRUNCATE ON metering.input_fences
  FOR EACH STATEMENT EXECUTE FUNCTION metering.reject_change();
CREATE TRIGGER /* guard ME001.usage-watermarks-no-truncate */ usage_watermarks_no_truncate BEFORE TRUNCATE ON metering.usage_watermarks
  FOR EACH STATEMENT EXECUTE FUNCTION metering.reject_change();
CREATE TRIGGER /* guard ME001.cost-lanes-no-truncate */ cost_lanes_no_truncate BEFORE TRUNCATE ON metering.cost_lanes
  FOR EACH STATEMENT EXECUTE FUNCTION metering.reject_change();
CREATE TRIGGER /* guard ME001.input-works-no-truncate */ input_works_no_truncate BEFORE TRUNCATE ON metering.input_works
  FOR EACH STATEMENT EXECUTE FUNCTION metering.reject_change();
CREATE TRIGGER /* guard ME001.work-attempts-no-truncate */ work_attempts_no_truncate BEFORE TRUNCATE ON metering.work_attempts
  FOR EACH STATEMENT EXECUTE FUNCTION metering.reject_change();
CREATE TRIGGER /* guard ME001.work-finishes-no-truncate */ work_finishes_no_truncate BEFORE TRUNCATE ON metering.work_finishes
  FOR EACH STATEMENT EXECUTE FUNCTION metering.reject_change();
CREATE TRIGGER /* guard ME001.pending-works-no-truncate */ pending_works_no_truncate BEFORE TRUNCATE ON metering.pending_works
  FOR EACH STATEMENT EXECUTE FUNCTION metering.reject_change();
CREATE TRIGGER /* guard ME001.eligibility-decisions-no-truncate */ eligibility_decisions_no_truncate BEFORE TRUNCATE ON metering.eligibility_decisions
  FOR EACH STATEMENT EXECUTE FUNCTION metering.reject_change();
CREATE TRIGGER /* guard ME001.meter-events-no-truncate */ meter_events_no_truncate BEFORE TRUNCATE ON metering.meter_events
  FOR EACH STATEMENT EXECUTE FUNCTION metering.reject_change();
CREATE TRIGGER /* guard ME001.settlement-input-snapshots-no-truncate */ settlement_input_snapshots_no_truncate BEFORE TRUNCATE ON metering.settlement_input_snapshots
  FOR EACH STATEMENT EXECUTE FUNCTION metering.reject_change();
CREATE TRIGGER /* guard ME001.settlement-input-current-no-truncate */ settlement_input_current_no_truncate BEFORE TRUNCATE ON metering.settlement_input_current
  FOR EACH STATEMENT EXECUTE FUNCTION metering.reject_change();
CREATE TRIGGER /* guard ME001.work-blocks-no-truncate */ work_blocks_no_truncate BEFORE TRUNCATE ON metering.work_blocks
  FOR EACH STATEMENT EXECUTE FUNCTION metering.reject_change();
CREATE TRIGGER /* guard ME001.provider-cost-facts-no-truncate */ provider_cost_facts_no_truncate BEFORE TRUNCATE ON metering.provider_cost_facts
  FOR EACH STATEMENT EXECUTE FUNCTION metering.reject_change();
CREATE TRIGGER /* guard ME001.cost-processing-facts-no-truncate */ cost_processing_facts_no_truncate BEFORE TRUNCATE ON metering.cost_processing_facts
  FOR EACH STATEMENT EXECUTE FUNCTION metering.reject_change();
CREATE TRIGGER /* guard ME001.cost-lane-coordination-no-truncate */ cost_lane_coordination_no_truncate BEFORE TRUNCATE ON metering.cost_lane_coordination
  FOR EACH STATEMENT EXECUTE FUNCTION metering.reject_change();
CREATE TRIGGER /* guard ME001.settlement-validation-receipts-no-truncate */ settlement_validation_receipts_no_truncate BEFORE TRUNCATE ON metering.settlement_validation_receipts
  FOR EACH STATEMENT EXECUTE FUNCTION metering.reject_change();

----------------------------------------------------------------------------
-- ME006, ME007: a SettlementInputCurrentValidationReceipt@1 answers for the
-- head at its insert. The pointer is share-locked (as validate.go does), so
-- a concurrent snapshot CAS waits and the answer is still exact at COMMIT.
-- The body is what Billing reads: it must say what the columns say, name
-- the stored digests of the validated and (not_current) Current snapshots.
CREATE FUNCTION metering.settlement_validation_at_head() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  head_version     bigint;
  head_ref         text;
  validated_digest text;
  head_digest      text;
  body             jsonb;
  res              jsonb;
BEGIN
  SELECT c.state_version, c.snapshot_ref INTO head_version, head_ref
  FROM metering.settlement_input_current c
  WHERE c.settlement_dimension_id = NEW.settlement_dimension_id
  FOR SHARE;
  IF /* guard ME006.not-head */ head_version IS NULL OR NEW.current_state_version IS DISTINCT FROM head_version THEN
    RAISE EXCEPTION 'metering: validation receipt of % answers for version % but the Current pointer is at %',
      NEW.settlement_dimension_id, NEW.current_state_version, head_version USING ERRCODE = 'ME006';
  END IF;
  SELECT s.snapshot_digest INTO validated_digest FROM metering.settlement_input_snapshots s
  WHERE s.settlement_dimension_id = NEW.settlement_dimension_id AND s.state_version = NEW.validated_state_version;
  SELECT s.snapshot_digest INTO head_digest FROM metering.settlement_input_snapshots s
  WHERE s.settlement_dimension_id = NEW.settlement_dimension_id AND s.state_version = head_version;
  body := NEW.receipt_body::jsonb;
  res := body -> 'result';
  IF /* guard ME007.body-mismatch */ (body ->> 'settlementInputCurrentValidationReceiptRef') IS DISTINCT FROM NEW.receipt_ref
     OR (body ->> 'settlementInputCurrentValidationReceiptDigest') IS DISTINCT FROM NEW.receipt_digest
     OR (body ->> 'validationOperationId') IS DISTINCT FROM NEW.validation_operation_id::text
     OR (body ->> 'purpose') IS DISTINCT FROM NEW.purpose
     OR (body ->> 'settlementDimensionId') IS DISTINCT FROM NEW.settlement_dimension_id::text
     OR (body -> 'settlementInputStateVersion') IS DISTINCT FROM to_jsonb(NEW.validated_state_version)
     OR (body ->> 'settlementInputSnapshotRef') IS DISTINCT FROM NEW.validated_snapshot_ref
     OR (body ->> 'settlementInputSnapshotDigest') IS DISTINCT FROM validated_digest
     OR (res ->> 'state') IS DISTINCT FROM NEW.result_state
     OR (NEW.result_state = 'current' AND (res ?| ARRAY['currentSettlementInputSnapshotRef', 'currentSettlementInputStateVersion']))
     OR (NEW.result_state = 'not_current' AND (
          (res -> 'currentSettlementInputStateVersion') IS DISTINCT FROM to_jsonb(head_version)
          OR (res ->> 'currentSettlementInputSnapshotRef') IS DISTINCT FROM head_ref
          OR (res ->> 'currentSettlementInputSnapshotDigest') IS DISTINCT FROM head_digest)) THEN
    RAISE EXCEPTION 'metering: validation receipt % body does not say what its row and the chain of % say',
      NEW.validation_operation_id, NEW.settlement_dimension_id USING ERRCODE = 'ME007';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER settlement_validation_receipts_at_head BEFORE INSERT ON metering.settlement_validation_receipts
  FOR EACH ROW EXECUTE FUNCTION metering.settlement_validation_at_head();

----------------------------------------------------------------------------
-- ME008 (and ME005 by event id): one event per chain revision. Each
-- snapshot version names the id of its current-changed event (unique), and
-- every event of that pair must be named by exactly one stored snapshot
-- whose dimension, version and five-tuples it carries. A second event for
-- the same dimension and revision has another id (the first one holds the
-- outbox primary key), which no snapshot names.
ALTER TABLE metering.settlement_input_snapshots ADD COLUMN event_id uuid;
ALTER TABLE metering.settlement_input_snapshots DISABLE TRIGGER settlement_input_snapshots_insert_only;
UPDATE metering.settlement_input_snapshots s SET event_id = (
  SELECT e.event_id FROM outbox.outbox_events e
  WHERE e.aggregate_type = 'settlement_input_dimension' AND e.aggregate_id = s.settlement_dimension_id::text
    AND e.aggregate_revision = s.state_version AND e.event_type = 'metering.settlement-input.current-changed@1'
    AND e.event_payload ->> 'settlementInputSnapshotRef' = s.snapshot_ref
  ORDER BY e.created_at, e.event_id LIMIT 1);
ALTER TABLE metering.settlement_input_snapshots ENABLE TRIGGER settlement_input_snapshots_insert_only;
CREATE UNIQUE INDEX settlement_input_snapshots_event ON metering.settlement_input_snapshots (event_id);

-- 00006's commit check, now by the snapshot's event id (the outbox primary
-- key) instead of the aggregate: the event named is exactly this version's.
CREATE OR REPLACE FUNCTION metering.settlement_input_committed_atomically() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  pointer_version bigint;
  event           uuid;
BEGIN
  IF /* guard ME005.predecessor-digest-not-stored */ NEW.predecessor_state_version IS NOT NULL AND NOT EXISTS (
      SELECT 1 FROM metering.settlement_input_snapshots p
      WHERE p.settlement_dimension_id = NEW.settlement_dimension_id AND p.state_version = NEW.predecessor_state_version
        AND p.snapshot_ref = NEW.predecessor_snapshot_ref
        AND p.snapshot_digest = NEW.snapshot_body::jsonb #>> '{predecessorSettlementInput,settlementInputSnapshotDigest}') THEN
    RAISE EXCEPTION 'metering: settlement input % version % names a predecessor digest that is not stored', NEW.settlement_dimension_id, NEW.state_version
      USING ERRCODE = 'ME005';
  END IF;
  SELECT state_version INTO pointer_version FROM metering.settlement_input_current
  WHERE settlement_dimension_id = NEW.settlement_dimension_id;
  IF /* guard ME005.pointer-not-moved */ pointer_version IS NULL OR pointer_version < NEW.state_version THEN
    RAISE EXCEPTION 'metering: settlement input % version % committed without its Current pointer move', NEW.settlement_dimension_id, NEW.state_version
      USING ERRCODE = 'ME005';
  END IF;
  SELECT e.event_id INTO event FROM outbox.outbox_events e
  WHERE e.event_id = NEW.event_id
    AND e.aggregate_type = 'settlement_input_dimension' AND e.aggregate_id = NEW.settlement_dimension_id::text
    AND e.aggregate_revision = NEW.state_version AND e.event_type = 'metering.settlement-input.current-changed@1'
    AND e.event_payload ->> 'settlementInputSnapshotRef' = NEW.snapshot_ref
    AND e.event_payload ->> 'settlementInputSnapshotDigest' = NEW.snapshot_digest;
  IF /* guard ME005.event-missing */ event IS NULL THEN
    RAISE EXCEPTION 'metering: settlement input % version % committed without its metering.settlement-input.current-changed@1 event %',
      NEW.settlement_dimension_id, NEW.state_version, NEW.event_id USING ERRCODE = 'ME005';
  END IF;
  IF /* guard ME005.delivery-missing */ NOT EXISTS (SELECT 1 FROM outbox.outbox_deliveries d WHERE d.event_id = event AND d.destination = 'billing_settlement_catch_up') THEN
    RAISE EXCEPTION 'metering: the settlement input event % has no billing_settlement_catch_up delivery', event USING ERRCODE = 'ME005';
  END IF;
  RETURN NULL;
END
$fn$;

CREATE FUNCTION metering.settlement_input_event_backed() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  s    metering.settlement_input_snapshots%ROWTYPE;
  p    jsonb := NEW.event_payload;
  pred jsonb := NEW.event_payload -> 'predecessorSettlementInput';
BEGIN
  SELECT * INTO s FROM metering.settlement_input_snapshots x WHERE x.event_id = NEW.event_id;
  -- An event adopted from a legacy outbox (OB-BOOT-1, by the owner only:
  -- no role may insert legacy_adoptions) predates the snapshot chain.
  IF NOT FOUND AND EXISTS (SELECT 1 FROM outbox.legacy_adoptions a WHERE a.event_id = NEW.event_id) THEN
    RETURN NULL;
  END IF;
  IF /* guard ME008.event-unnamed */ NOT FOUND THEN
    RAISE EXCEPTION 'metering: settlement input event % (aggregate %, revision %) is named by no snapshot version',
      NEW.event_id, NEW.aggregate_id, NEW.aggregate_revision USING ERRCODE = 'ME008';
  END IF;
  IF /* guard ME008.event-not-carrying */ NEW.aggregate_type <> 'settlement_input_dimension'
     OR NEW.aggregate_id <> s.settlement_dimension_id::text
     OR NEW.aggregate_revision <> s.state_version
     OR (p ->> 'settlementDimensionId') IS DISTINCT FROM s.settlement_dimension_id::text
     OR (p -> 'settlementInputStateVersion') IS DISTINCT FROM to_jsonb(s.state_version)
     OR (p ->> 'settlementInputSnapshotRef') IS DISTINCT FROM s.snapshot_ref
     OR (p ->> 'settlementInputSnapshotDigest') IS DISTINCT FROM s.snapshot_digest
     OR (p ->> 'billingReservationId') IS DISTINCT FROM s.billing_reservation_id::text
     OR (p ->> 'runId') IS DISTINCT FROM s.run_id::text
     OR (p ->> 'runStepId') IS DISTINCT FROM s.run_step_id::text
     OR (p ->> 'executionAttemptId') IS DISTINCT FROM s.execution_attempt_id::text
     OR (p ->> 'chargeDimensionKey') IS DISTINCT FROM s.charge_dimension_key
     OR (CASE WHEN s.predecessor_state_version IS NULL
          THEN (pred ->> 'state') IS DISTINCT FROM 'none'
          ELSE (pred ->> 'state') IS DISTINCT FROM 'present'
            OR (pred ->> 'settlementInputSnapshotRef') IS DISTINCT FROM s.predecessor_snapshot_ref
            OR (pred -> 'settlementInputStateVersion') IS DISTINCT FROM to_jsonb(s.predecessor_state_version)
            OR (pred ->> 'settlementInputSnapshotDigest') IS DISTINCT FROM
               (s.snapshot_body::jsonb #>> '{predecessorSettlementInput,settlementInputSnapshotDigest}')
        END) THEN
    RAISE EXCEPTION 'metering: settlement input event % does not carry its snapshot % (dimension %, version %)',
      NEW.event_id, s.snapshot_ref, s.settlement_dimension_id, s.state_version USING ERRCODE = 'ME008';
  END IF;
  RETURN NULL;
END
$fn$;
CREATE CONSTRAINT TRIGGER outbox_events_settlement_input_backed
  AFTER INSERT ON outbox.outbox_events DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN (NEW.event_type = 'metering.settlement-input.current-changed@1')
  EXECUTE FUNCTION metering.settlement_input_event_backed();

----------------------------------------------------------------------------
-- ME009: a finish is absorbing. A finished Work starts no new attempt and
-- never re-enters the queue, so no token of it (old or new) can write again
-- (its facts were already refused by ME003, its second finish by the
-- primary key). Checked at COMMIT: an attempt's Work must still be queued,
-- its queue row locked (FOR KEY SHARE: a finish that holds it waits or has
-- deleted it, so the two never both commit) and unfinished; a queue row's
-- Work must be unfinished (a queue row deleted by an uncommitted finish
-- makes a concurrent insert of the same key wait for that finish).
CREATE FUNCTION metering.work_not_finished() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF TG_TABLE_NAME = 'work_attempts' THEN
    PERFORM 1 FROM metering.pending_works q WHERE q.work_ref = NEW.work_ref FOR KEY SHARE;
    IF /* guard ME009.attempt-not-queued */ NOT FOUND THEN
      RAISE EXCEPTION 'metering: attempt % of work % started for a Work that is not queued', NEW.attempt_number, NEW.work_ref
        USING ERRCODE = 'ME009';
    END IF;
  END IF;
  IF /* guard ME009.work-finished */ EXISTS (SELECT 1 FROM metering.work_finishes f WHERE f.work_ref = NEW.work_ref) THEN
    RAISE EXCEPTION 'metering: work % is finished: no new attempt, no queue row (%)', NEW.work_ref, TG_TABLE_NAME
      USING ERRCODE = 'ME009';
  END IF;
  RETURN NULL;
END
$fn$;
CREATE CONSTRAINT TRIGGER work_attempts_not_finished
  AFTER INSERT ON metering.work_attempts DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION metering.work_not_finished();
CREATE CONSTRAINT TRIGGER pending_works_not_finished
  AFTER INSERT ON metering.pending_works DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION metering.work_not_finished();

----------------------------------------------------------------------------
-- ME011: a `superseded` finish says a newer generation of the Work's lane
-- exists. Checked at COMMIT (the input processor writes it in the
-- transaction that schedules that generation): the lane's latest generation
-- (input_fences for the eligibility lane, cost_lanes for a provider-cost
-- lane) must be past the Work's. A forged superseded finish of the lane's
-- latest Work would end it with no fact and leave the lane without result.
CREATE FUNCTION metering.superseded_only_when_moved() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  w           metering.input_works%ROWTYPE;
  lane_latest bigint;
BEGIN
  SELECT * INTO w FROM metering.input_works x WHERE x.work_ref = NEW.work_ref;
  IF w.lane_kind = 'eligibility_and_settlement_input' THEN
    SELECT f.latest_eligibility_work_generation INTO lane_latest
    FROM metering.input_fences f WHERE f.execution_attempt_id = w.execution_attempt_id;
  ELSE
    SELECT l.latest_work_generation INTO lane_latest
    FROM metering.cost_lanes l WHERE l.execution_attempt_id = w.execution_attempt_id
      AND l.gateway_deployment_id = w.gateway_deployment_id AND l.source_evidence_dimension_key = w.source_evidence_dimension_key;
  END IF;
  IF /* guard ME011.superseded-lane-not-moved */ lane_latest IS NULL OR lane_latest <= w.work_generation THEN
    RAISE EXCEPTION 'metering: superseded finish of work % (generation %), but its lane is at generation %',
      NEW.work_ref, w.work_generation, lane_latest USING ERRCODE = 'ME011';
  END IF;
  RETURN NULL;
END
$fn$;
CREATE CONSTRAINT TRIGGER work_finishes_superseded_only_when_moved
  AFTER INSERT ON metering.work_finishes DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN (NEW.outcome_state = 'superseded')
  EXECUTE FUNCTION metering.superseded_only_when_moved();

REVOKE ALL ON FUNCTION metering.settlement_validation_at_head(), metering.settlement_input_event_backed(),
  metering.work_not_finished(), metering.superseded_only_when_moved() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION metering.settlement_validation_at_head(), metering.settlement_input_event_backed(),
  metering.work_not_finished(), metering.superseded_only_when_moved() TO oceanway_metering;
-- +goose StatementEnd
