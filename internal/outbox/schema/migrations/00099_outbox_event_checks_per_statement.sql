-- The append's event checks once per statement, set-based (issue 17, item
-- 3: "what the immutability triggers cost per row").
--
-- Every appended event went through two PL/pgSQL row triggers besides the
-- one that stamps it (outbox_events_insert): the envelope check
-- (outbox_events_envelope, OW018, 00006) and the archived-id check
-- (outbox_events_not_archived, OWR03, 00093); and every append statement
-- through the producer check (outbox_events_producer, OWP01, 00091), a
-- statement trigger over the statement's new rows. Each row trigger call
-- pays a function call and, per transaction, the set-up of its expressions
-- and statements, for checks that need nothing the row does not already
-- hold. One statement-level AFTER INSERT trigger now makes all three checks
-- over the statement's new rows (the transition table the producer check
-- already read), in one query, with the same SQLSTATEs and messages. A
-- violating statement still fails as a whole, at its end instead of at the
-- offending row (so a row that also breaks a table CHECK now reports the
-- CHECK's 23514 first); when rows break several of these rules, OW018 is
-- reported before OWR03 before OWP01, as the old triggers fired.
--
-- SECURITY DEFINER: it reads outbox.archived_events, which the producer
-- role cannot read (the old archived-id check was a definer function too).

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION outbox.check_appended_events() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
-- No JIT: a plan over a transition table is estimated from that statement's
-- row count and the planner's guesses for never-analyzed small tables:
-- a draft without this setting was compiled (with inlining and
-- optimization, about a second) on every append of 100 events.
SET jit = off AS $fn$
DECLARE
  bad record;
  v_database_producer text := (SELECT dp.producer FROM outbox.database_producer dp);
BEGIN
  SELECT c.event_id, c.event_type, c.contradicts, c.archived, c.producer INTO bad
    FROM (
      SELECT n.event_id, n.event_type,
             (SELECT CASE
                WHEN jsonb_typeof(j) IS DISTINCT FROM 'object' THEN 'event_envelope'
                WHEN j->>'eventId' IS DISTINCT FROM n.event_id::text THEN 'event_id'
                WHEN j->>'eventType' IS DISTINCT FROM n.event_type THEN 'event_type'
                WHEN j->>'eventSchemaVersion' IS DISTINCT FROM n.schema_version THEN 'schema_version'
                WHEN j->>'aggregateType' IS DISTINCT FROM n.aggregate_type THEN 'aggregate_type'
                WHEN j->>'aggregateId' IS DISTINCT FROM n.aggregate_id THEN 'aggregate_id'
                WHEN j->'aggregateRevision' IS DISTINCT FROM to_jsonb(n.aggregate_revision) THEN 'aggregate_revision'
                WHEN j->>'tenantKind' IS DISTINCT FROM n.tenant_kind THEN 'tenant_kind'
                WHEN j->>'tenantId' IS DISTINCT FROM n.tenant_id THEN 'tenant_id'
                WHEN j->>'workspaceId' IS DISTINCT FROM n.workspace_id THEN 'workspace_id'
                WHEN j->>'projectId' IS DISTINCT FROM n.project_id THEN 'project_id'
                WHEN j->>'correlationId' IS DISTINCT FROM n.correlation_id THEN 'correlation_id'
                WHEN j->>'causationId' IS DISTINCT FROM n.causation_id THEN 'causation_id'
                WHEN j->>'operationId' IS DISTINCT FROM n.operation_id THEN 'operation_id'
                WHEN j->'payload' IS DISTINCT FROM n.event_payload THEN 'event_payload'
                WHEN CASE WHEN (j->>'occurredAt') ~ '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z$'
                          THEN (j->>'occurredAt')::timestamptz IS DISTINCT FROM n.occurred_at
                          ELSE true END THEN 'occurred_at'
              END FROM (SELECT n.event_envelope::jsonb AS j OFFSET 0) parsed) AS contradicts, -- OFFSET 0: parse once
             EXISTS (SELECT 1 FROM outbox.archived_events a WHERE a.event_id = n.event_id) AS archived,
             (SELECT pp.producer FROM outbox.pair_producers pp
               WHERE pp.event_type = n.event_type AND pp.schema_version = n.schema_version) AS producer
        FROM new_events n
      OFFSET 0) c -- each row's checks evaluated once, not again in WHERE and ORDER BY
   WHERE c.contradicts IS NOT NULL OR c.archived OR c.producer <> v_database_producer
   ORDER BY c.contradicts IS NULL, NOT c.archived
   LIMIT 1;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  IF bad.contradicts IS NOT NULL THEN
    RAISE EXCEPTION 'outbox: event % column % contradicts its envelope', bad.event_id, bad.contradicts
      USING ERRCODE = 'OW018';
  END IF;
  IF bad.archived THEN
    RAISE EXCEPTION 'outbox: event % was archived by a retention run; its id cannot be appended again', bad.event_id
      USING ERRCODE = 'OWR03';
  END IF;
  RAISE EXCEPTION 'outbox: event % (%) is produced by %, this database is the % fact store', bad.event_id, bad.event_type,
    bad.producer, v_database_producer USING ERRCODE = 'OWP01';
END
$fn$;
REVOKE ALL ON FUNCTION outbox.check_appended_events() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox.check_appended_events() TO oceanway_producer, oceanway_outbox_definer;

DROP TRIGGER outbox_events_envelope ON outbox.outbox_events;
DROP TRIGGER outbox_events_not_archived ON outbox.outbox_events;
DROP TRIGGER outbox_events_producer ON outbox.outbox_events;
CREATE TRIGGER outbox_events_checks AFTER INSERT ON outbox.outbox_events
  REFERENCING NEW TABLE AS new_events
  FOR EACH STATEMENT EXECUTE FUNCTION outbox.check_appended_events();
-- The three old functions stay, unused, for the Down migration.
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DROP TRIGGER outbox_events_checks ON outbox.outbox_events;
DROP FUNCTION outbox.check_appended_events();
CREATE TRIGGER outbox_events_envelope BEFORE INSERT ON outbox.outbox_events
  FOR EACH ROW EXECUTE FUNCTION outbox.outbox_events_check_envelope();
CREATE TRIGGER outbox_events_not_archived BEFORE INSERT ON outbox.outbox_events
  FOR EACH ROW EXECUTE FUNCTION outbox.outbox_events_not_archived();
CREATE TRIGGER outbox_events_producer AFTER INSERT ON outbox.outbox_events
  REFERENCING NEW TABLE AS new_events
  FOR EACH STATEMENT EXECUTE FUNCTION outbox.guard_event_producer();
-- +goose StatementEnd
