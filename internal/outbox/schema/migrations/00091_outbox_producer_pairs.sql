-- A producer appends only its own pairs (issue 13, item 8): the database
-- refuses an event whose exact pair is produced by another fact boundary,
-- e.g. a billing event appended in the execution database.
--
-- outbox.pair_producers: the producer boundary of each of the 13 exact pairs
--   (contracts/envelope Pairs(); internal/release's test keeps both equal).
--   An event of a pair not listed here is already refused by the active
--   definition (DS-9); this table adds no pair.
-- outbox.database_producer: the one boundary this database is the fact
--   store of, declared once by the owner line that applies to it
--   (outbox.declare_producer); immutable afterwards. A database that has
--   not declared its producer (an outbox without an owner, e.g. a test
--   database with the outbox line alone) is not restricted.
-- The statement-level trigger refuses the whole insert with SQLSTATE OWP01
-- when any new event's pair belongs to another producer (one query per
-- statement, whatever the batch size).

-- +goose Up
-- +goose StatementBegin
CREATE TABLE outbox.pair_producers (
  event_type     text NOT NULL,
  schema_version text NOT NULL,
  producer       text NOT NULL CHECK (producer IN ('core', 'execution', 'gateway', 'metering')),
  PRIMARY KEY (event_type, schema_version)
);

INSERT INTO outbox.pair_producers (event_type, schema_version, producer) VALUES
  ('billing.case-resolution.applied@1', '1', 'core'),
  ('billing.finalization-reconciliation-resolution.applied@1', '1', 'core'),
  ('billing.finalization-reconciliation.case-requested@1', '1', 'core'),
  ('billing.finalization.committed@1', '1', 'core'),
  ('billing.late-settlement-command-result.committed@1', '1', 'core'),
  ('billing.late-settlement-exposure.case-requested@1', '1', 'core'),
  ('billing.settlement-transition.committed@1', '1', 'core'),
  ('execution.attempt-eligibility.finalized@1', '1', 'execution'),
  ('execution.run-finalization.closed@1', '1', 'execution'),
  ('gateway.evidence-availability.current-changed@1', '1', 'gateway'),
  ('metering.settlement-input.current-changed@1', '1', 'metering'),
  ('run.created@2.0', '2.0', 'core'),
  ('wallet.reserved@2.0', '2.0', 'core');

CREATE TABLE outbox.database_producer (
  singleton boolean NOT NULL DEFAULT true PRIMARY KEY CHECK (singleton),
  producer  text    NOT NULL CHECK (producer IN ('core', 'execution', 'gateway', 'metering'))
);

CREATE FUNCTION outbox.reject_producer_change() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  RAISE EXCEPTION 'outbox: % on %.% is forbidden (a database''s producer is declared once)', TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME
    USING ERRCODE = 'OW001';
END
$fn$;

CREATE TRIGGER /* guard OW001.pair-producers-immutable */ pair_producers_immutable BEFORE UPDATE OR DELETE ON outbox.pair_producers
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_producer_change();
CREATE TRIGGER /* guard OW001.database-producer-immutable */ database_producer_immutable BEFORE UPDATE OR DELETE ON outbox.database_producer
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_producer_change();

-- declare_producer: idempotent for the same boundary, refuses another one.
CREATE FUNCTION outbox.declare_producer(p text) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
  current_producer text;
BEGIN
  INSERT INTO outbox.database_producer (producer) VALUES (p) ON CONFLICT (singleton) DO NOTHING;
  SELECT producer INTO current_producer FROM outbox.database_producer;
  IF /* guard OWP01.declare-other-producer */ current_producer <> p THEN
    RAISE EXCEPTION 'outbox: this database is the % fact store, not %', current_producer, p USING ERRCODE = 'OWP01';
  END IF;
END
$fn$;

CREATE FUNCTION outbox.guard_event_producer() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  bad record;
BEGIN
  SELECT n.event_id, n.event_type, pp.producer, dp.producer AS database_producer INTO bad
    FROM new_events n
    JOIN outbox.pair_producers pp ON pp.event_type = n.event_type AND pp.schema_version = n.schema_version
    JOIN outbox.database_producer dp ON dp.producer <> pp.producer
   LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'outbox: event % (%) is produced by %, this database is the % fact store', bad.event_id, bad.event_type, bad.producer, bad.database_producer
      USING ERRCODE = 'OWP01';
  END IF;
  RETURN NULL;
END
$fn$;

CREATE TRIGGER outbox_events_producer AFTER INSERT ON outbox.outbox_events
  REFERENCING NEW TABLE AS new_events
  FOR EACH STATEMENT EXECUTE FUNCTION outbox.guard_event_producer();

REVOKE ALL ON outbox.pair_producers, outbox.database_producer FROM PUBLIC;
GRANT SELECT ON outbox.pair_producers, outbox.database_producer TO oceanway_producer, oceanway_dispatcher, oceanway_outbox_definer;
REVOKE ALL ON FUNCTION outbox.declare_producer(text) FROM PUBLIC;
-- +goose StatementEnd
