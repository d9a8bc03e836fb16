-- Publication lookups by primary key (issue 17, OB-PUB-1 unchanged).
--
-- A statement that says `event_id = $1 AND published_at IS NULL` lets the
-- planner choose the partial index outbox_events_unpublished (every
-- unpublished event) and filter it on event_id: with statistics taken while
-- the backlog was small that plan looks cheapest, and it then reads the whole
-- unpublished backlog per acknowledgement (measured: 1.8 million index tuples
-- for 10,000 events). Both per-ack lookups of published_at now go by the
-- primary key alone and test published_at on the row they read:
--   * outbox.prove_publication (00005, the deferred proof at COMMIT);
--   * outbox.record_publication's compare-and-set (00003, and any later
--     redefinition): the event row is already read and locked FOR NO KEY
--     UPDATE into `e` at the top of the function, so `e.published_at` is
--     current and the CAS cannot race.
-- record_publication is patched in place (its definition text, whatever
-- migration wrote it last) rather than redefined here, so a redefinition of
-- its checks in another migration keeps them; the migration fails when the
-- statement it rewrites is not found exactly once.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION outbox.prove_publication() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  v_published_at timestamptz;
BEGIN
  SELECT e.published_at INTO v_published_at FROM outbox.outbox_events e WHERE e.event_id = NEW.event_id;
  IF v_published_at IS NULL
     AND NOT EXISTS (SELECT 1 FROM outbox.outbox_deliveries d
                      WHERE d.event_id = NEW.event_id AND d.mandatory AND d.status <> 'acknowledged') THEN
    RAISE EXCEPTION 'outbox: every mandatory delivery of event % is acknowledged but published_at was not recorded', NEW.event_id
      USING ERRCODE = 'OW015';
  END IF;
  RETURN NULL;
END
$fn$;

DO $patch$
DECLARE
  v_fn    regprocedure;
  v_def   text;
  v_old   constant text := 'UPDATE outbox.outbox_events SET published_at = now() WHERE event_id = p_event_id AND published_at IS NULL;';
  v_new   constant text := 'IF e.published_at IS NULL THEN
    UPDATE outbox.outbox_events SET published_at = now() WHERE event_id = p_event_id;
  END IF;';
BEGIN
  SELECT p.oid::regprocedure INTO STRICT v_fn FROM pg_catalog.pg_proc p
   WHERE p.pronamespace = 'outbox'::regnamespace AND p.proname = 'record_publication';
  v_def := pg_catalog.pg_get_functiondef(v_fn);
  IF (length(v_def) - length(replace(v_def, v_old, ''))) / length(v_old) <> 1 THEN
    RAISE EXCEPTION 'outbox migration 00007: the published_at CAS of % was not found exactly once', v_fn;
  END IF;
  EXECUTE replace(v_def, v_old, v_new);
END
$patch$;
-- +goose StatementEnd

-- Lease-expiry recovery's index, unusable by the fenced writes (issue 17).
-- The fenced UPDATEs (ack, renew, retry, quarantine) say `status = 'leased'`,
-- which implied the old predicate, so the planner could (and with a cached
-- generic plan made while the table was small, did) walk this index, every
-- entry an ended lease left behind until vacuum, and filter it, instead of
-- probing the primary key. With `lease_owner IS NOT NULL` in the predicate
-- (true of every leased row: outbox_deliveries_leased_has_lease) only a
-- statement that says so, the recovery scan, can use it.
-- +goose StatementBegin
DROP INDEX outbox.outbox_deliveries_claim_leased;
CREATE INDEX outbox_deliveries_claim_leased ON outbox.outbox_deliveries (lease_expires_at)
  WHERE status = 'leased' AND lease_owner IS NOT NULL;
-- +goose StatementEnd
