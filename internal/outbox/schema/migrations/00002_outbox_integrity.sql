-- Integrity triggers: immutability (OB-STORE-2, OB-STORE-4), the deferred
-- delivery-set proof (OB-APPEND-2, DS-9), definition immutability (DS-6),
-- destination bindings (DS-4), the published_at guard (OB-PUB-1) and the
-- append NOTIFY.
--
-- Custom SQLSTATEs (class OW), mapped to sentinels in internal/outbox/errors.go
-- and documented in docs/outbox-storage.md:
--   OW001 immutable column changed            OW002 delete/truncate of an append-only table
--   OW003 update of an insert-only fact       OW004 delivery set mismatch (missing/extra/wrong row)
--   OW005 delivery row outside its event's append transaction
--   OW006 frozen definition not active / pair not applicable
--   OW007 published_at reset/changed/overwritten or set before completion
--   OW008 change of a terminal delivery       OW009 record_publication: invalid ack (00003)
--   OW010 definition incomplete or member outside registration
--   OW011 reserved, never raised (the cutover is checked in Go)
--   OW012 row inserted in a non-initial state OW013 wrong isolation level for a controlled function
--   OW014 quarantine row and delivery state disagree
--   OW015 last mandatory ack committed without published_at (00005)
--   OW016 delivery row names no destination binding
--   OW017 destination or consumer already bound differently

-- +goose Up
-- +goose StatementBegin

-- Key of the activation lock: appends hold it shared, activation and
-- projection cutover hold it exclusive (DS-8).
CREATE FUNCTION outbox.activation_lock_key() RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN 7939621465001;

-- Takes the activation lock shared and returns the active definition's
-- quadruple (no row when none is active). Under REPEATABLE READ or
-- SERIALIZABLE it also share-locks the row, so a transaction whose snapshot
-- predates a concurrent activation fails with 40001 instead of freezing a
-- retired definition. Under READ COMMITTED the query after the lock sees
-- the latest committed activation.
CREATE FUNCTION outbox.lock_active_definition(
  OUT delivery_set_version bigint,
  OUT delivery_set_definition_schema_version text,
  OUT delivery_set_definition_digest_algorithm_version text,
  OUT delivery_set_definition_digest text)
RETURNS SETOF record
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
  PERFORM pg_advisory_xact_lock_shared(outbox.activation_lock_key());
  IF current_setting('transaction_isolation') = 'read committed' THEN
    RETURN QUERY SELECT v.delivery_set_version, v.delivery_set_definition_schema_version,
        v.delivery_set_definition_digest_algorithm_version, v.delivery_set_definition_digest
      FROM outbox.delivery_set_versions v WHERE v.status = 'active';
  ELSE
    RETURN QUERY SELECT v.delivery_set_version, v.delivery_set_definition_schema_version,
        v.delivery_set_definition_digest_algorithm_version, v.delivery_set_definition_digest
      FROM outbox.delivery_set_versions v WHERE v.status = 'active' FOR SHARE;
  END IF;
END
$fn$;

CREATE FUNCTION outbox.reject_delete() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  RAISE EXCEPTION 'outbox: % on %.% is forbidden (append-only)', TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME
    USING ERRCODE = 'OW002';
END
$fn$;

CREATE FUNCTION outbox.reject_update() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  RAISE EXCEPTION 'outbox: UPDATE of %.% is forbidden (insert-only fact)', TG_TABLE_SCHEMA, TG_TABLE_NAME
    USING ERRCODE = 'OW003';
END
$fn$;

----------------------------------------------------------------------------
-- Destination bindings (DS-4, OB-DELIVER-1)

CREATE TRIGGER /* guard OW003.bindings-no-update */ destination_bindings_immutable BEFORE UPDATE ON outbox.destination_bindings
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_update();
CREATE TRIGGER /* guard OW002.bindings-no-delete */ destination_bindings_no_delete BEFORE DELETE ON outbox.destination_bindings
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_delete();
CREATE TRIGGER /* guard OW002.bindings-no-truncate */ destination_bindings_no_truncate BEFORE TRUNCATE ON outbox.destination_bindings
  FOR EACH STATEMENT EXECUTE FUNCTION outbox.reject_delete();

-- The controlled path that seeds bindings: insert-or-compare, so a release
-- may bind on every start. Returns true when it inserted, false when the
-- identical binding exists; raises OW017 when the destination (or the
-- consumer) is bound differently. Owned by the definer (00004), EXECUTE
-- granted to no role: bindings are written by the role that registers
-- definitions, never by the producer or the dispatcher.
CREATE FUNCTION outbox.bind_destination(
  p_destination                     text,
  p_consumer_name                   text,
  p_expected_receipt_type           text,
  p_expected_receipt_schema_version text,
  p_projection_target_state         text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
  INSERT INTO outbox.destination_bindings (destination, consumer_name, expected_receipt_type,
    expected_receipt_schema_version, projection_target_state)
  VALUES (p_destination, p_consumer_name, p_expected_receipt_type, p_expected_receipt_schema_version,
    p_projection_target_state)
  ON CONFLICT DO NOTHING;
  IF FOUND THEN
    RETURN true;
  END IF;
  PERFORM 1 FROM outbox.destination_bindings b
   WHERE b.destination = p_destination AND b.consumer_name = p_consumer_name
     AND b.expected_receipt_type = p_expected_receipt_type
     AND b.expected_receipt_schema_version = p_expected_receipt_schema_version
     AND b.projection_target_state = p_projection_target_state;
  IF /* guard OW017.bound-differently */ NOT FOUND THEN
    RAISE EXCEPTION 'outbox: destination % (consumer %) is already bound differently', p_destination, p_consumer_name
      USING ERRCODE = 'OW017';
  END IF;
  RETURN false;
END
$fn$;

----------------------------------------------------------------------------
-- Definitions and members (DS-6)

CREATE FUNCTION outbox.delivery_set_versions_before_update() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF /* guard OW001.definition-immutable */ (to_jsonb(NEW) - '{status,activated_at,retired_at}'::text[])
     IS DISTINCT FROM (to_jsonb(OLD) - '{status,activated_at,retired_at}'::text[]) THEN
    RAISE EXCEPTION 'outbox: delivery set definition % is immutable', OLD.delivery_set_version
      USING ERRCODE = 'OW001';
  END IF;
  RETURN NEW;
END
$fn$;

CREATE TRIGGER delivery_set_versions_immutable BEFORE UPDATE ON outbox.delivery_set_versions
  FOR EACH ROW EXECUTE FUNCTION outbox.delivery_set_versions_before_update();
CREATE TRIGGER /* guard OW002.definitions-no-delete */ delivery_set_versions_no_delete BEFORE DELETE ON outbox.delivery_set_versions
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_delete();
CREATE TRIGGER /* guard OW002.definitions-no-truncate */ delivery_set_versions_no_truncate BEFORE TRUNCATE ON outbox.delivery_set_versions
  FOR EACH STATEMENT EXECUTE FUNCTION outbox.reject_delete();

CREATE FUNCTION outbox.delivery_set_versions_before_insert() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF /* guard OW012.definition-not-registered */ NEW.status <> 'registered' OR NEW.activated_at IS NOT NULL OR NEW.retired_at IS NOT NULL THEN
    RAISE EXCEPTION 'outbox: a definition is registered first and activated explicitly'
      USING ERRCODE = 'OW012';
  END IF;
  NEW.registered_txid := pg_current_xact_id();
  NEW.registered_at := now();
  RETURN NEW;
END
$fn$;
CREATE TRIGGER delivery_set_versions_insert BEFORE INSERT ON outbox.delivery_set_versions
  FOR EACH ROW EXECUTE FUNCTION outbox.delivery_set_versions_before_insert();

-- Members are written only in the transaction that registers their version.
CREATE FUNCTION outbox.delivery_set_members_before_insert() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  PERFORM 1 FROM outbox.delivery_set_versions v
   WHERE v.delivery_set_version = NEW.delivery_set_version AND v.registered_txid = pg_current_xact_id();
  IF /* guard OW010.members-outside-registration */ NOT FOUND THEN
    RAISE EXCEPTION 'outbox: members of definition % can only be inserted with its registration', NEW.delivery_set_version
      USING ERRCODE = 'OW010';
  END IF;
  NEW.registered_txid := pg_current_xact_id();
  RETURN NEW;
END
$fn$;
CREATE TRIGGER delivery_set_members_insert BEFORE INSERT ON outbox.delivery_set_members
  FOR EACH ROW EXECUTE FUNCTION outbox.delivery_set_members_before_insert();
CREATE TRIGGER /* guard OW003.members-no-update */ delivery_set_members_immutable BEFORE UPDATE ON outbox.delivery_set_members
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_update();
CREATE TRIGGER /* guard OW002.members-no-delete */ delivery_set_members_no_delete BEFORE DELETE ON outbox.delivery_set_members
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_delete();
CREATE TRIGGER /* guard OW002.members-no-truncate */ delivery_set_members_no_truncate BEFORE TRUNCATE ON outbox.delivery_set_members
  FOR EACH STATEMENT EXECUTE FUNCTION outbox.reject_delete();

-- At commit of the registration: counts equal the arrays, every member's
-- pair is applicable (DS-1..DS-3 re-proved in the database).
CREATE FUNCTION outbox.prove_definition() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  v_members integer;
  v_orphans integer;
BEGIN
  SELECT count(*),
         count(*) FILTER (WHERE NOT NEW.applicable_events @> jsonb_build_array(
           jsonb_build_object('eventType', m.event_type, 'eventSchemaVersion', m.schema_version)))
    INTO v_members, v_orphans
    FROM outbox.delivery_set_members m WHERE m.delivery_set_version = NEW.delivery_set_version;
  IF /* guard OW010.definition-incomplete */ v_members <> NEW.member_count OR v_orphans <> 0
     OR jsonb_array_length(NEW.applicable_events) <> NEW.applicable_event_count THEN
    RAISE EXCEPTION 'outbox: definition % is incomplete: % members (want %), % orphan members, % applicable events (want %)',
      NEW.delivery_set_version, v_members, NEW.member_count, v_orphans,
      jsonb_array_length(NEW.applicable_events), NEW.applicable_event_count
      USING ERRCODE = 'OW010';
  END IF;
  RETURN NULL;
END
$fn$;
CREATE CONSTRAINT TRIGGER delivery_set_versions_proof AFTER INSERT ON outbox.delivery_set_versions
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION outbox.prove_definition();

-- Projection registry: versions are immutable except the one-time ready mark.
CREATE FUNCTION outbox.projection_versions_before_update() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF /* guard OW001.projection-version-immutable */ NEW.projection_name <> OLD.projection_name OR NEW.projection_version <> OLD.projection_version
     OR NEW.registered_at <> OLD.registered_at
     OR (OLD.ready_at IS NOT NULL AND (NEW.ready_at IS DISTINCT FROM OLD.ready_at
         OR NEW.readiness_proof_ref IS DISTINCT FROM OLD.readiness_proof_ref)) THEN
    RAISE EXCEPTION 'outbox: projection version %/% is immutable once ready', OLD.projection_name, OLD.projection_version
      USING ERRCODE = 'OW001';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER projection_versions_immutable BEFORE UPDATE ON outbox.projection_versions
  FOR EACH ROW EXECUTE FUNCTION outbox.projection_versions_before_update();
CREATE TRIGGER /* guard OW002.projection-versions-no-delete */ projection_versions_no_delete BEFORE DELETE ON outbox.projection_versions
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_delete();

----------------------------------------------------------------------------
-- Events (OB-STORE-2, OB-PUB-1)

-- The server owns created_at, created_txid and the initial published_at.
CREATE FUNCTION outbox.outbox_events_before_insert() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF /* guard OW012.event-inserted-published */ NEW.published_at IS NOT NULL THEN
    RAISE EXCEPTION 'outbox: event % cannot be inserted as published', NEW.event_id USING ERRCODE = 'OW012';
  END IF;
  NEW.created_at := now();
  NEW.created_txid := pg_current_xact_id();
  RETURN NEW;
END
$fn$;
CREATE TRIGGER outbox_events_insert BEFORE INSERT ON outbox.outbox_events
  FOR EACH ROW EXECUTE FUNCTION outbox.outbox_events_before_insert();

-- True when every mandatory delivery of the event is acknowledged.
CREATE FUNCTION outbox.all_mandatory_acknowledged(p_event_id uuid) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
RETURN NOT EXISTS (SELECT 1 FROM outbox.outbox_deliveries d
                    WHERE d.event_id = p_event_id AND d.mandatory AND d.status <> 'acknowledged');

-- Every column but published_at is immutable; published_at goes only
-- NULL → first completion time and never changes again. The immutable
-- columns are compared directly, not as two jsonb serializations per
-- update (the published_at CAS runs in every ack that completes an event);
-- TestEventImmutabilityEveryColumn fails when a new column is not listed.
CREATE FUNCTION outbox.outbox_events_before_update() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF /* guard OW001.event-immutable */ (NEW.event_id, NEW.event_type, NEW.schema_version, NEW.delivery_set_version,
      NEW.delivery_set_definition_schema_version, NEW.delivery_set_definition_digest_algorithm_version,
      NEW.delivery_set_definition_digest, NEW.aggregate_type, NEW.aggregate_id, NEW.aggregate_revision,
      NEW.tenant_kind, NEW.tenant_id, NEW.workspace_id, NEW.project_id, NEW.correlation_id, NEW.causation_id,
      NEW.operation_id, NEW.event_envelope, NEW.event_payload, NEW.event_envelope_digest_algorithm_version,
      NEW.event_envelope_sha256, NEW.occurred_at, NEW.created_at, NEW.created_txid)
     IS DISTINCT FROM
     (OLD.event_id, OLD.event_type, OLD.schema_version, OLD.delivery_set_version,
      OLD.delivery_set_definition_schema_version, OLD.delivery_set_definition_digest_algorithm_version,
      OLD.delivery_set_definition_digest, OLD.aggregate_type, OLD.aggregate_id, OLD.aggregate_revision,
      OLD.tenant_kind, OLD.tenant_id, OLD.workspace_id, OLD.project_id, OLD.correlation_id, OLD.causation_id,
      OLD.operation_id, OLD.event_envelope, OLD.event_payload, OLD.event_envelope_digest_algorithm_version,
      OLD.event_envelope_sha256, OLD.occurred_at, OLD.created_at, OLD.created_txid) THEN
    RAISE EXCEPTION 'outbox: event % is immutable', OLD.event_id USING ERRCODE = 'OW001';
  END IF;
  IF NEW.published_at IS DISTINCT FROM OLD.published_at THEN
    IF /* guard OW007.published-at-set-once */ OLD.published_at IS NOT NULL THEN
      RAISE EXCEPTION 'outbox: published_at of event % cannot be reset, changed or overwritten', OLD.event_id
        USING ERRCODE = 'OW007';
    END IF;
    IF /* guard OW007.published-before-complete */ NOT outbox.all_mandatory_acknowledged(OLD.event_id) THEN
      RAISE EXCEPTION 'outbox: published_at of event % set before all mandatory deliveries were acknowledged', OLD.event_id
        USING ERRCODE = 'OW007';
    END IF;
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER outbox_events_immutable BEFORE UPDATE ON outbox.outbox_events
  FOR EACH ROW EXECUTE FUNCTION outbox.outbox_events_before_update();
CREATE TRIGGER outbox_events_no_delete BEFORE DELETE ON outbox.outbox_events
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_delete();
CREATE TRIGGER /* guard OW002.events-no-truncate */ outbox_events_no_truncate BEFORE TRUNCATE ON outbox.outbox_events
  FOR EACH STATEMENT EXECUTE FUNCTION outbox.reject_delete();

-- The deferred delivery-set proof (OB-APPEND-2, DS-9). At commit, per
-- event: the frozen definition is the active one and lists the pair, and the
-- event's delivery rows equal the definition's mandatory members for the
-- pair — no missing row, no extra row, every frozen expectation equal. One
-- statement checks lock + active + applicable, one counts members,
-- deliveries and matches.
CREATE FUNCTION outbox.prove_delivery_set() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  v_active     boolean;
  v_applicable boolean;
  v_members    integer;
  v_deliveries integer;
  v_matched    integer;
BEGIN
  IF current_setting('transaction_isolation') = 'read committed' THEN
    PERFORM pg_advisory_xact_lock_shared(outbox.activation_lock_key());
    SELECT v.status = 'active',
           v.applicable_events @> jsonb_build_array(jsonb_build_object(
             'eventType', NEW.event_type, 'eventSchemaVersion', NEW.schema_version))
      INTO v_active, v_applicable
      FROM outbox.delivery_set_versions v
     WHERE v.delivery_set_version = NEW.delivery_set_version;
  ELSE
    -- share-locks the active row: a snapshot older than an activation fails with 40001
    SELECT true,
           v.applicable_events @> jsonb_build_array(jsonb_build_object(
             'eventType', NEW.event_type, 'eventSchemaVersion', NEW.schema_version))
      INTO v_active, v_applicable
      FROM outbox.lock_active_definition() a
      JOIN outbox.delivery_set_versions v USING (delivery_set_version)
     WHERE a.delivery_set_version = NEW.delivery_set_version;
  END IF;
  -- The event's foreign key makes the whole quadruple equal to this row's.
  IF v_active IS NOT TRUE THEN
    RAISE EXCEPTION 'outbox: event % froze delivery set definition % which is not the active definition',
      NEW.event_id, NEW.delivery_set_version USING ERRCODE = 'OW006';
  END IF;
  IF NOT v_applicable THEN
    RAISE EXCEPTION 'outbox: event % pair %/% is not applicable in definition %',
      NEW.event_id, NEW.event_type, NEW.schema_version, NEW.delivery_set_version USING ERRCODE = 'OW006';
  END IF;

  SELECT (SELECT count(*) FROM outbox.delivery_set_members m
           WHERE m.delivery_set_version = NEW.delivery_set_version AND m.event_type = NEW.event_type
             AND m.schema_version = NEW.schema_version AND m.mandatory),
         count(*),
         count(*) FILTER (WHERE m.destination IS NOT NULL)
    INTO v_members, v_deliveries, v_matched
    FROM outbox.outbox_deliveries d
    LEFT JOIN outbox.delivery_set_members m
      ON m.delivery_set_version = NEW.delivery_set_version AND m.event_type = NEW.event_type
     AND m.schema_version = NEW.schema_version AND m.destination = d.destination AND m.mandatory
     AND d.mandatory
     AND d.delivery_set_version = m.delivery_set_version
     AND d.consumer_name = m.consumer_name
     AND d.expected_receipt_type = m.expected_receipt_type
     AND d.expected_receipt_schema_version = m.expected_receipt_schema_version
     AND d.required_projection_name IS NOT DISTINCT FROM m.projection_name
     AND d.required_projection_version IS NOT DISTINCT FROM m.projection_version
   WHERE d.event_id = NEW.event_id;
  IF v_matched <> v_members OR v_deliveries <> v_members THEN
    RAISE EXCEPTION 'outbox: event % delivery set mismatch: % mandatory members, % delivery rows, % matching',
      NEW.event_id, v_members, v_deliveries, v_matched USING ERRCODE = 'OW004';
  END IF;
  RETURN NULL;
END
$fn$;
CREATE CONSTRAINT TRIGGER outbox_events_delivery_set_proof AFTER INSERT ON outbox.outbox_events
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION outbox.prove_delivery_set();

----------------------------------------------------------------------------
-- Deliveries (OB-STORE-3)

-- A delivery row is born pending in its event's append transaction, with
-- no lease, attempt, error or ack, and names a bound destination (DS-4).
CREATE FUNCTION outbox.deliveries_before_insert() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  v_in_append boolean;
  v_bound     boolean;
BEGIN
  SELECT EXISTS (SELECT 1 FROM outbox.outbox_events e
                  WHERE e.event_id = NEW.event_id AND e.created_txid = pg_current_xact_id()),
         EXISTS (SELECT 1 FROM outbox.destination_bindings b
                  WHERE b.destination = NEW.destination AND b.consumer_name = NEW.consumer_name
                    AND b.expected_receipt_type = NEW.expected_receipt_type
                    AND b.expected_receipt_schema_version = NEW.expected_receipt_schema_version
                    AND (b.projection_target_state = 'required') = (NEW.required_projection_name IS NOT NULL))
    INTO v_in_append, v_bound;
  IF /* guard OW005.delivery-outside-append */ NOT v_in_append THEN
    RAISE EXCEPTION 'outbox: delivery %/% can only be created in the transaction that appends its event',
      NEW.event_id, NEW.destination USING ERRCODE = 'OW005';
  END IF;
  IF /* guard OW012.delivery-not-initial */ NEW.status <> 'pending' OR NEW.attempt_count <> 0
     OR num_nonnulls(NEW.lease_owner, NEW.lease_token, NEW.lease_expires_at, NEW.current_attempt_id,
          NEW.last_attempt_at, NEW.delivered_at, NEW.last_error_code, NEW.last_error_ref,
          NEW.ack_consumer_name, NEW.ack_receipt_type, NEW.ack_receipt_key, NEW.ack_receipt_schema_version,
          NEW.ack_receipt_digest_algorithm_version, NEW.ack_receipt_digest,
          NEW.ack_event_envelope_digest_algorithm_version, NEW.ack_event_envelope_sha256) <> 0 THEN
    RAISE EXCEPTION 'outbox: delivery %/% must be created pending with no lease, attempt, error or ack',
      NEW.event_id, NEW.destination USING ERRCODE = 'OW012';
  END IF;
  IF /* guard OW016.delivery-unbound */ NOT v_bound THEN
    RAISE EXCEPTION 'outbox: delivery %/% names a destination, consumer, receipt or projection branch no destination binding has',
      NEW.event_id, NEW.destination USING ERRCODE = 'OW016';
  END IF;
  NEW.created_at := now();
  RETURN NEW;
END
$fn$;
CREATE TRIGGER outbox_deliveries_insert BEFORE INSERT ON outbox.outbox_deliveries
  FOR EACH ROW EXECUTE FUNCTION outbox.deliveries_before_insert();

-- Identity and frozen expectations never change; acknowledged and
-- quarantined are terminal.
CREATE FUNCTION outbox.deliveries_before_update() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF (NEW.event_id, NEW.delivery_set_version, NEW.destination, NEW.consumer_name, NEW.expected_receipt_type,
      NEW.expected_receipt_schema_version, NEW.required_projection_name, NEW.required_projection_version,
      NEW.mandatory, NEW.created_at)
     IS DISTINCT FROM
     (OLD.event_id, OLD.delivery_set_version, OLD.destination, OLD.consumer_name, OLD.expected_receipt_type,
      OLD.expected_receipt_schema_version, OLD.required_projection_name, OLD.required_projection_version,
      OLD.mandatory, OLD.created_at) THEN
    RAISE EXCEPTION 'outbox: frozen columns of delivery %/% are immutable', OLD.event_id, OLD.destination
      USING ERRCODE = 'OW001';
  END IF;
  IF OLD.status IN ('acknowledged', 'quarantined') AND NEW IS DISTINCT FROM OLD THEN
    RAISE EXCEPTION 'outbox: delivery %/% is % (terminal)', OLD.event_id, OLD.destination, OLD.status
      USING ERRCODE = 'OW008';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER outbox_deliveries_update BEFORE UPDATE ON outbox.outbox_deliveries
  FOR EACH ROW EXECUTE FUNCTION outbox.deliveries_before_update();
CREATE TRIGGER outbox_deliveries_no_delete BEFORE DELETE ON outbox.outbox_deliveries
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_delete();
CREATE TRIGGER /* guard OW002.deliveries-no-truncate */ outbox_deliveries_no_truncate BEFORE TRUNCATE ON outbox.outbox_deliveries
  FOR EACH STATEMENT EXECUTE FUNCTION outbox.reject_delete();

-- Wake-up for dispatchers: one notification per destination per statement
-- (PostgreSQL folds identical notifications of one transaction into one).
-- Channel outbox_deliveries, payload = destination; delivered at commit.
CREATE FUNCTION outbox.deliveries_notify() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM pg_notify('outbox_deliveries', s.destination)
     FROM (SELECT DISTINCT n.destination FROM new_rows n) s;
  RETURN NULL;
END
$fn$;
CREATE TRIGGER outbox_deliveries_notify AFTER INSERT ON outbox.outbox_deliveries
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION outbox.deliveries_notify();

----------------------------------------------------------------------------
-- Attempts (OB-STORE-4) and quarantine (OB-STORE-5)

CREATE TRIGGER /* guard OW003.attempt-starts-no-update */ outbox_delivery_attempt_starts_immutable BEFORE UPDATE ON outbox.outbox_delivery_attempt_starts
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_update();
CREATE TRIGGER outbox_delivery_attempt_starts_no_delete BEFORE DELETE ON outbox.outbox_delivery_attempt_starts
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_delete();
CREATE TRIGGER /* guard OW002.attempt-starts-no-truncate */ outbox_delivery_attempt_starts_no_truncate BEFORE TRUNCATE ON outbox.outbox_delivery_attempt_starts
  FOR EACH STATEMENT EXECUTE FUNCTION outbox.reject_delete();
CREATE TRIGGER /* guard OW003.attempt-finishes-no-update */ outbox_delivery_attempt_finishes_immutable BEFORE UPDATE ON outbox.outbox_delivery_attempt_finishes
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_update();
CREATE TRIGGER outbox_delivery_attempt_finishes_no_delete BEFORE DELETE ON outbox.outbox_delivery_attempt_finishes
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_delete();
CREATE TRIGGER /* guard OW002.attempt-finishes-no-truncate */ outbox_delivery_attempt_finishes_no_truncate BEFORE TRUNCATE ON outbox.outbox_delivery_attempt_finishes
  FOR EACH STATEMENT EXECUTE FUNCTION outbox.reject_delete();

-- A quarantine row carries the event's own stored envelope digest.
CREATE FUNCTION outbox.quarantine_before_insert() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  PERFORM 1 FROM outbox.outbox_events e
   WHERE e.event_id = NEW.event_id
     AND e.event_envelope_digest_algorithm_version = NEW.event_envelope_digest_algorithm_version
     AND e.event_envelope_sha256 = NEW.event_envelope_sha256;
  IF /* guard OW014.quarantine-digest */ NOT FOUND THEN
    RAISE EXCEPTION 'outbox: quarantine %/% must carry the event''s stored envelope digest', NEW.event_id, NEW.destination
      USING ERRCODE = 'OW014';
  END IF;
  IF /* guard OW012.quarantine-not-initial */ NEW.acknowledged_at IS NOT NULL OR NEW.case_id IS NOT NULL THEN
    RAISE EXCEPTION 'outbox: quarantine %/% starts unacknowledged and without a case', NEW.event_id, NEW.destination
      USING ERRCODE = 'OW012';
  END IF;
  NEW.quarantined_at := now();
  RETURN NEW;
END
$fn$;
CREATE TRIGGER outbox_quarantine_insert BEFORE INSERT ON outbox.outbox_quarantine
  FOR EACH ROW EXECUTE FUNCTION outbox.quarantine_before_insert();

-- Only acknowledged_at and case_id may be filled in later, once each.
CREATE FUNCTION outbox.quarantine_before_update() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF /* guard OW003.quarantine-set-once */ (to_jsonb(NEW) - '{acknowledged_at,case_id}'::text[]) IS DISTINCT FROM (to_jsonb(OLD) - '{acknowledged_at,case_id}'::text[])
     OR (OLD.acknowledged_at IS NOT NULL AND NEW.acknowledged_at IS DISTINCT FROM OLD.acknowledged_at)
     OR (OLD.case_id IS NOT NULL AND NEW.case_id IS DISTINCT FROM OLD.case_id) THEN
    RAISE EXCEPTION 'outbox: quarantine %/% is insert-only (acknowledged_at and case_id are set once)', OLD.event_id, OLD.destination
      USING ERRCODE = 'OW003';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER outbox_quarantine_update BEFORE UPDATE ON outbox.outbox_quarantine
  FOR EACH ROW EXECUTE FUNCTION outbox.quarantine_before_update();
CREATE TRIGGER /* guard OW002.quarantine-no-delete */ outbox_quarantine_no_delete BEFORE DELETE ON outbox.outbox_quarantine
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_delete();
CREATE TRIGGER /* guard OW002.quarantine-no-truncate */ outbox_quarantine_no_truncate BEFORE TRUNCATE ON outbox.outbox_quarantine
  FOR EACH STATEMENT EXECUTE FUNCTION outbox.reject_delete();

-- At commit: a quarantined delivery has its quarantine row and a quarantine
-- row's delivery is quarantined.
CREATE FUNCTION outbox.prove_quarantine() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  PERFORM 1 FROM outbox.outbox_deliveries d
    JOIN outbox.outbox_quarantine q ON q.event_id = d.event_id AND q.destination = d.destination
   WHERE d.event_id = NEW.event_id AND d.destination = NEW.destination AND d.status = 'quarantined';
  IF /* guard OW014.quarantine-state-disagrees */ NOT FOUND THEN
    RAISE EXCEPTION 'outbox: delivery %/% quarantine state and quarantine row disagree', NEW.event_id, NEW.destination
      USING ERRCODE = 'OW014';
  END IF;
  RETURN NULL;
END
$fn$;
CREATE CONSTRAINT TRIGGER outbox_quarantine_proof AFTER INSERT ON outbox.outbox_quarantine
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION outbox.prove_quarantine();
CREATE CONSTRAINT TRIGGER outbox_deliveries_quarantine_proof AFTER UPDATE ON outbox.outbox_deliveries
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (NEW.status = 'quarantined' AND OLD.status <> 'quarantined')
  EXECUTE FUNCTION outbox.prove_quarantine();
-- +goose StatementEnd
