-- Retention of closed history (RET-1; outbox document 保留与重建).
--
-- Closed history leaves the hot tables only through one audited, controlled
-- function, outbox.retention_archive, called after `oceanway retention
-- archive` (internal/retention) has written, fsynced and verified a
-- content-addressed archive on disk. In one transaction it:
--
--   * refuses anything that is not closed: the event must be published, every
--     delivery acknowledged (terminal, with its frozen ack), no quarantine
--     row, no legacy adoption record, created before the run's cutoff, and
--     its stored envelope digest must equal the one the archive holds;
--   * refuses a run whose counts (deliveries, attempt starts, attempt
--     finishes) differ from the hot rows: the archive must hold exactly what
--     is removed;
--   * records the run (manifest digest, cutoff, counts, who, when) in the
--     insert-only outbox.retention_runs, and per event and per delivery the
--     logical source that must not vanish with the hot rows
--     (outbox.archived_events, outbox.archived_deliveries: event id, pair,
--     envelope digest, frozen definition quadruple, frozen member, ack
--     receipt key and digest — no envelope, no payload);
--   * deletes the attempt finishes, attempt starts, deliveries and events in
--     four set-based statements (a batch of N events is one call, not N).
--
-- The append-only triggers on those four tables are replaced by
-- outbox.retention_delete_guard: a DELETE is admitted only for a row whose
-- event a retention run recorded in the same transaction. No role but the
-- function's owner has DELETE on them; producer and dispatcher get 42501,
-- anyone else (even the table owner) OW002. TRUNCATE stays refused.
--
-- Completeness after archiving: outbox.delivery_facts (the source of the
-- Operations completeness proof and of the admin's delivery completeness)
-- keeps the archived deliveries with the same columns (00094, after the
-- view's own migration 00090), so the proof's source
-- events, mandatory deliveries, fingerprints and receipt anti-join are
-- unchanged by an archive run: the archived range is part of the approved
-- source view, never a gap, and receipts are never deleted.
--
-- An archived event id cannot be appended again (OWR03).

-- +goose Up
-- +goose StatementBegin
DO $do$
DECLARE r text;
BEGIN
  FOREACH r IN ARRAY ARRAY['oceanway_retention', 'oceanway_retention_definer'] LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r) THEN
      BEGIN
        EXECUTE format('CREATE ROLE %I NOLOGIN', r);
      EXCEPTION WHEN duplicate_object OR unique_violation THEN
        NULL; -- created concurrently by another migration
      END;
    END IF;
  END LOOP;
END
$do$;

CREATE TABLE outbox.retention_runs (
  run_id                            uuid        NOT NULL PRIMARY KEY,
  -- sha256 of the manifest's RFC 8785 canonical bytes (its file name)
  manifest_digest_algorithm_version text        NOT NULL CHECK (manifest_digest_algorithm_version = 'jcs-sha256-v1'),
  manifest_sha256                   text        NOT NULL UNIQUE CHECK (manifest_sha256 ~ '^[0-9a-f]{64}$'),
  cutoff                            timestamptz NOT NULL,
  events                            bigint      NOT NULL CHECK (events > 0),
  deliveries                        bigint      NOT NULL CHECK (deliveries >= 0),
  attempt_starts                    bigint      NOT NULL CHECK (attempt_starts >= 0),
  attempt_finishes                  bigint      NOT NULL CHECK (attempt_finishes >= 0),
  -- when the caller verified the written archive (every file re-read and re-digested)
  verified_at                       timestamptz NOT NULL,
  recorded_at                       timestamptz NOT NULL DEFAULT now(),
  recorded_by                       text        NOT NULL DEFAULT session_user,
  recorded_txid                     xid8        NOT NULL DEFAULT pg_current_xact_id(),
  CONSTRAINT retention_runs_verified_before CHECK (verified_at <= recorded_at AND cutoff <= recorded_at)
);

CREATE TABLE outbox.archived_events (
  event_id                                         uuid        NOT NULL PRIMARY KEY,
  run_id                                           uuid        NOT NULL REFERENCES outbox.retention_runs,
  event_type                                       text        NOT NULL,
  schema_version                                   text        NOT NULL,
  event_envelope_digest_algorithm_version          text        NOT NULL,
  event_envelope_sha256                            text        NOT NULL,
  delivery_set_version                             bigint      NOT NULL,
  delivery_set_definition_schema_version           text        NOT NULL,
  delivery_set_definition_digest_algorithm_version text        NOT NULL,
  delivery_set_definition_digest                   text        NOT NULL,
  created_at                                       timestamptz NOT NULL,
  published_at                                     timestamptz NOT NULL
);
CREATE INDEX archived_events_run ON outbox.archived_events (run_id);

CREATE TABLE outbox.archived_deliveries (
  event_id                    uuid    NOT NULL REFERENCES outbox.archived_events,
  destination                 text    NOT NULL,
  consumer_name               text    NOT NULL,
  mandatory                   boolean NOT NULL,
  status                      text    NOT NULL CHECK (status = 'acknowledged'),
  required_projection_name    text,
  required_projection_version bigint,
  ack_receipt_key             text    NOT NULL,
  ack_receipt_digest          text    NOT NULL,
  PRIMARY KEY (event_id, destination)
);

CREATE TRIGGER /* guard OW003.retention-runs-no-update */ retention_runs_immutable BEFORE UPDATE ON outbox.retention_runs
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_update();
CREATE TRIGGER /* guard OW002.retention-runs-no-delete */ retention_runs_no_delete BEFORE DELETE ON outbox.retention_runs
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_delete();
CREATE TRIGGER /* guard OW002.retention-runs-no-truncate */ retention_runs_no_truncate BEFORE TRUNCATE ON outbox.retention_runs
  FOR EACH STATEMENT EXECUTE FUNCTION outbox.reject_delete();
CREATE TRIGGER /* guard OW003.archived-events-no-update */ archived_events_immutable BEFORE UPDATE ON outbox.archived_events
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_update();
CREATE TRIGGER /* guard OW002.archived-events-no-delete */ archived_events_no_delete BEFORE DELETE ON outbox.archived_events
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_delete();
CREATE TRIGGER /* guard OW002.archived-events-no-truncate */ archived_events_no_truncate BEFORE TRUNCATE ON outbox.archived_events
  FOR EACH STATEMENT EXECUTE FUNCTION outbox.reject_delete();
CREATE TRIGGER /* guard OW003.archived-deliveries-no-update */ archived_deliveries_immutable BEFORE UPDATE ON outbox.archived_deliveries
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_update();
CREATE TRIGGER /* guard OW002.archived-deliveries-no-delete */ archived_deliveries_no_delete BEFORE DELETE ON outbox.archived_deliveries
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_delete();
CREATE TRIGGER /* guard OW002.archived-deliveries-no-truncate */ archived_deliveries_no_truncate BEFORE TRUNCATE ON outbox.archived_deliveries
  FOR EACH STATEMENT EXECUTE FUNCTION outbox.reject_delete();

-- Deleting an attempt start checks the quarantine rows that may reference
-- it (foreign key on attempt_id): an index keeps that check a lookup however
-- many quarantine rows accumulate (quarantined events never leave).
CREATE INDEX outbox_quarantine_attempt ON outbox.outbox_quarantine (attempt_id);

-- The delete guard of the four history tables: a row may go only when a
-- retention run recorded its event in this very transaction (and only the
-- retention function can record one). One primary-key lookup per row.
CREATE FUNCTION outbox.retention_delete_guard() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  v_event_id uuid;
BEGIN
  IF TG_TABLE_NAME = 'outbox_delivery_attempt_finishes' THEN
    SELECT s.event_id INTO v_event_id FROM outbox.outbox_delivery_attempt_starts s WHERE s.attempt_id = OLD.attempt_id;
  ELSE
    v_event_id := OLD.event_id;
  END IF;
  PERFORM 1 FROM outbox.archived_events a
    JOIN outbox.retention_runs r USING (run_id)
   WHERE a.event_id = v_event_id AND r.recorded_txid = pg_current_xact_id();
  IF /* guard OW002.delete-outside-retention-run */ NOT FOUND THEN
    RAISE EXCEPTION 'outbox: DELETE on %.% is forbidden outside a recorded retention run (append-only)',
      TG_TABLE_SCHEMA, TG_TABLE_NAME USING ERRCODE = 'OW002';
  END IF;
  RETURN OLD;
END
$fn$;

DROP TRIGGER outbox_events_no_delete ON outbox.outbox_events;
DROP TRIGGER outbox_deliveries_no_delete ON outbox.outbox_deliveries;
DROP TRIGGER outbox_delivery_attempt_starts_no_delete ON outbox.outbox_delivery_attempt_starts;
DROP TRIGGER outbox_delivery_attempt_finishes_no_delete ON outbox.outbox_delivery_attempt_finishes;
CREATE TRIGGER /* guard OW002.events-no-delete */ outbox_events_no_delete BEFORE DELETE ON outbox.outbox_events
  FOR EACH ROW EXECUTE FUNCTION outbox.retention_delete_guard();
CREATE TRIGGER outbox_deliveries_no_delete BEFORE DELETE ON outbox.outbox_deliveries
  FOR EACH ROW EXECUTE FUNCTION outbox.retention_delete_guard();
CREATE TRIGGER outbox_delivery_attempt_starts_no_delete BEFORE DELETE ON outbox.outbox_delivery_attempt_starts
  FOR EACH ROW EXECUTE FUNCTION outbox.retention_delete_guard();
CREATE TRIGGER outbox_delivery_attempt_finishes_no_delete BEFORE DELETE ON outbox.outbox_delivery_attempt_finishes
  FOR EACH ROW EXECUTE FUNCTION outbox.retention_delete_guard();

-- An archived event id is taken for good: appending it again would give one
-- id two histories.
CREATE FUNCTION outbox.outbox_events_not_archived() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  PERFORM 1 FROM outbox.archived_events a WHERE a.event_id = NEW.event_id;
  IF FOUND THEN
    RAISE EXCEPTION 'outbox: event % was archived by a retention run; its id cannot be appended again', NEW.event_id
      USING ERRCODE = 'OWR03';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER outbox_events_not_archived BEFORE INSERT ON outbox.outbox_events
  FOR EACH ROW EXECUTE FUNCTION outbox.outbox_events_not_archived();

-- The one controlled path out of the hot tables (see the header).
-- OWR01: an event is not closed (or unknown, or younger than the cutoff);
-- OWR02: the archive does not describe the hot rows (digest or counts).
CREATE FUNCTION outbox.retention_archive(
  p_run_id uuid, p_manifest_sha256 text, p_cutoff timestamptz, p_verified_at timestamptz,
  p_event_ids uuid[], p_event_sha256 text[],
  p_deliveries bigint, p_attempt_starts bigint, p_attempt_finishes bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  v_events     bigint := cardinality(p_event_ids);
  v_bad        text;
  v_deliveries bigint;
  v_starts     bigint;
  v_finishes   bigint;
  v_n          bigint;
BEGIN
  -- one run at a time: two overlapping runs would otherwise race on the same rows
  PERFORM pg_advisory_xact_lock(hashtext('outbox.retention_archive'));
  IF v_events IS NULL OR v_events = 0 OR v_events <> cardinality(p_event_sha256) THEN
    RAISE EXCEPTION 'outbox: retention run % needs one archived digest per event', p_run_id USING ERRCODE = 'OWR02';
  END IF;
  IF (SELECT count(DISTINCT e) FROM unnest(p_event_ids) e) <> v_events THEN
    RAISE EXCEPTION 'outbox: retention run % lists an event twice', p_run_id USING ERRCODE = 'OWR02';
  END IF;
  IF p_cutoff > now() OR p_verified_at > now() THEN
    RAISE EXCEPTION 'outbox: retention run % has a cutoff or verification time in the future', p_run_id
      USING ERRCODE = 'OWR01';
  END IF;

  -- Refuse the first event that is not closed. Closed is final (published_at
  -- is set once, acknowledged is terminal, a quarantine row needs a
  -- quarantined delivery), and the advisory lock above serializes runs.
  SELECT p.event_id::text || ': ' || CASE
           WHEN e.event_id IS NULL THEN 'not in the hot table'
           WHEN e.published_at IS NULL THEN 'unpublished'
           WHEN e.created_at >= p_cutoff THEN 'created after the cutoff'
           WHEN EXISTS (SELECT 1 FROM outbox.outbox_quarantine q WHERE q.event_id = e.event_id) THEN 'quarantined'
           WHEN EXISTS (SELECT 1 FROM outbox.outbox_deliveries d
                         WHERE d.event_id = e.event_id AND d.status <> 'acknowledged') THEN 'open delivery'
           WHEN EXISTS (SELECT 1 FROM outbox.legacy_adoptions a WHERE a.event_id = e.event_id) THEN 'legacy adoption record'
           WHEN e.event_envelope_sha256 <> p.sha THEN 'archived digest differs from the stored envelope digest'
         END
    INTO v_bad
    FROM unnest(p_event_ids, p_event_sha256) AS p(event_id, sha)
    LEFT JOIN outbox.outbox_events e ON e.event_id = p.event_id
   WHERE e.event_id IS NULL OR e.published_at IS NULL OR e.created_at >= p_cutoff
      OR EXISTS (SELECT 1 FROM outbox.outbox_quarantine q WHERE q.event_id = e.event_id)
      OR EXISTS (SELECT 1 FROM outbox.outbox_deliveries d WHERE d.event_id = e.event_id AND d.status <> 'acknowledged')
      OR EXISTS (SELECT 1 FROM outbox.legacy_adoptions a WHERE a.event_id = e.event_id)
      OR e.event_envelope_sha256 <> p.sha
   LIMIT 1;
  IF v_bad IS NOT NULL THEN
    RAISE EXCEPTION 'outbox: retention run % refused: event %', p_run_id, v_bad
      USING ERRCODE = CASE WHEN v_bad LIKE '%archived digest%' THEN 'OWR02' ELSE 'OWR01' END;
  END IF;

  SELECT count(*) INTO v_deliveries FROM outbox.outbox_deliveries d WHERE d.event_id = ANY (p_event_ids);
  SELECT count(*) INTO v_starts FROM outbox.outbox_delivery_attempt_starts s WHERE s.event_id = ANY (p_event_ids);
  SELECT count(*) INTO v_finishes FROM outbox.outbox_delivery_attempt_finishes f
    JOIN outbox.outbox_delivery_attempt_starts s USING (attempt_id) WHERE s.event_id = ANY (p_event_ids);
  IF (v_deliveries, v_starts, v_finishes) IS DISTINCT FROM (p_deliveries, p_attempt_starts, p_attempt_finishes) THEN
    RAISE EXCEPTION 'outbox: retention run % refused: archive holds %/%/% deliveries/starts/finishes, hot tables %/%/%',
      p_run_id, p_deliveries, p_attempt_starts, p_attempt_finishes, v_deliveries, v_starts, v_finishes
      USING ERRCODE = 'OWR02';
  END IF;

  INSERT INTO outbox.retention_runs (run_id, manifest_digest_algorithm_version, manifest_sha256, cutoff,
      events, deliveries, attempt_starts, attempt_finishes, verified_at)
  VALUES (p_run_id, 'jcs-sha256-v1', p_manifest_sha256, p_cutoff, v_events, v_deliveries, v_starts, v_finishes,
      p_verified_at);
  INSERT INTO outbox.archived_events (event_id, run_id, event_type, schema_version,
      event_envelope_digest_algorithm_version, event_envelope_sha256, delivery_set_version,
      delivery_set_definition_schema_version, delivery_set_definition_digest_algorithm_version,
      delivery_set_definition_digest, created_at, published_at)
  SELECT e.event_id, p_run_id, e.event_type, e.schema_version, e.event_envelope_digest_algorithm_version,
         e.event_envelope_sha256, e.delivery_set_version, e.delivery_set_definition_schema_version,
         e.delivery_set_definition_digest_algorithm_version, e.delivery_set_definition_digest, e.created_at,
         e.published_at
    FROM outbox.outbox_events e WHERE e.event_id = ANY (p_event_ids);
  INSERT INTO outbox.archived_deliveries (event_id, destination, consumer_name, mandatory, status,
      required_projection_name, required_projection_version, ack_receipt_key, ack_receipt_digest)
  SELECT d.event_id, d.destination, d.consumer_name, d.mandatory, d.status, d.required_projection_name,
         d.required_projection_version, d.ack_receipt_key, d.ack_receipt_digest
    FROM outbox.outbox_deliveries d WHERE d.event_id = ANY (p_event_ids);

  DELETE FROM outbox.outbox_delivery_attempt_finishes f USING outbox.outbox_delivery_attempt_starts s
   WHERE f.attempt_id = s.attempt_id AND s.event_id = ANY (p_event_ids);
  GET DIAGNOSTICS v_n = ROW_COUNT;
  IF v_n <> v_finishes THEN
    RAISE EXCEPTION 'outbox: retention run % removed % attempt finishes, expected %', p_run_id, v_n, v_finishes
      USING ERRCODE = 'OWR02';
  END IF;
  DELETE FROM outbox.outbox_delivery_attempt_starts s WHERE s.event_id = ANY (p_event_ids);
  GET DIAGNOSTICS v_n = ROW_COUNT;
  IF v_n <> v_starts THEN
    RAISE EXCEPTION 'outbox: retention run % removed % attempt starts, expected %', p_run_id, v_n, v_starts
      USING ERRCODE = 'OWR02';
  END IF;
  DELETE FROM outbox.outbox_deliveries d WHERE d.event_id = ANY (p_event_ids);
  GET DIAGNOSTICS v_n = ROW_COUNT;
  IF v_n <> v_deliveries THEN
    RAISE EXCEPTION 'outbox: retention run % removed % deliveries, expected %', p_run_id, v_n, v_deliveries
      USING ERRCODE = 'OWR02';
  END IF;
  DELETE FROM outbox.outbox_events e WHERE e.event_id = ANY (p_event_ids);
  GET DIAGNOSTICS v_n = ROW_COUNT;
  IF v_n <> v_events THEN
    RAISE EXCEPTION 'outbox: retention run % removed % events, expected %', p_run_id, v_n, v_events
      USING ERRCODE = 'OWR02';
  END IF;
END
$fn$;

-- Owners and grants. The definer owns the guard, the archived-id check and
-- the controlled function, with exactly what they need; oceanway_retention
-- (the operator's role) reads the history to export it and may execute the
-- function, nothing else.
REVOKE ALL ON outbox.retention_runs, outbox.archived_events, outbox.archived_deliveries FROM PUBLIC;
REVOKE ALL ON FUNCTION outbox.retention_delete_guard(), outbox.outbox_events_not_archived(),
  outbox.retention_archive(uuid, text, timestamptz, timestamptz, uuid[], text[], bigint, bigint, bigint) FROM PUBLIC;
GRANT USAGE ON SCHEMA outbox TO oceanway_retention, oceanway_retention_definer;
GRANT SELECT ON ALL TABLES IN SCHEMA outbox TO oceanway_retention, oceanway_retention_definer;
GRANT INSERT ON outbox.retention_runs, outbox.archived_events, outbox.archived_deliveries TO oceanway_retention_definer;
GRANT DELETE ON outbox.outbox_events, outbox.outbox_deliveries, outbox.outbox_delivery_attempt_starts,
  outbox.outbox_delivery_attempt_finishes TO oceanway_retention_definer;
GRANT SELECT ON outbox.retention_runs, outbox.archived_events, outbox.archived_deliveries
  TO oceanway_outbox_definer, oceanway_dispatcher;
ALTER FUNCTION outbox.retention_delete_guard() OWNER TO oceanway_retention_definer;
ALTER FUNCTION outbox.outbox_events_not_archived() OWNER TO oceanway_retention_definer;
ALTER FUNCTION outbox.retention_archive(uuid, text, timestamptz, timestamptz, uuid[], text[], bigint, bigint, bigint)
  OWNER TO oceanway_retention_definer;
GRANT EXECUTE ON FUNCTION outbox.retention_delete_guard() TO oceanway_retention_definer;
GRANT EXECUTE ON FUNCTION outbox.outbox_events_not_archived()
  TO oceanway_producer, oceanway_outbox_definer, oceanway_retention_definer;
GRANT EXECUTE ON FUNCTION
  outbox.retention_archive(uuid, text, timestamptz, timestamptz, uuid[], text[], bigint, bigint, bigint)
  TO oceanway_retention;
-- the definer's function fires the tables' other triggers and FK checks
GRANT EXECUTE ON FUNCTION outbox.reject_delete(), outbox.reject_update() TO oceanway_retention_definer;
-- +goose StatementEnd
