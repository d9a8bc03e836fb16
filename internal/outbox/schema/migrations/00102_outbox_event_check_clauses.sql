-- The append's event checks, one refusal per clause (issue 37).
--
-- outbox.check_appended_events (00099) is redefined with the same query,
-- order, messages and SQLSTATEs, so that each refusal is its own marked
-- condition (docs/guard-clauses.md) and a test can tell each one apart
-- from its absence. One change: the producer refusal (OWP01) was the
-- function's last, unconditional RAISE, reached when the offending row
-- neither contradicts its envelope nor reuses an archived id; it is now the
-- condition that made the row offending in the first place
-- (bad.producer <> the database's producer), followed by a RETURN NULL no
-- row reaches (the query selects only rows that break one of the three).
--
-- The three row-level functions 00099 left unused for its Down migration,
-- outbox.outbox_events_check_envelope (00006), outbox.outbox_events_not_archived
-- (00093) and outbox.guard_event_producer (00091), no trigger executes since
-- 00099: their RAISEs refuse nothing. The last two are dropped here (the
-- rules they held are OW018/OWR03/OWP01 of check_appended_events below);
-- the Down migration restores them, as dynamic SQL, for 00099's Down.
-- (outbox_events_check_envelope, 00006, is left to that migration's owner.)

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION outbox.check_appended_events() RETURNS trigger
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
                WHEN /* guard OW018.envelope-not-object */ jsonb_typeof(j) IS DISTINCT FROM 'object' THEN 'event_envelope'
                WHEN /* guard OW018.envelope-event-id */ j->>'eventId' IS DISTINCT FROM n.event_id::text THEN 'event_id'
                WHEN /* guard OW018.envelope-event-type */ j->>'eventType' IS DISTINCT FROM n.event_type THEN 'event_type'
                WHEN /* guard OW018.envelope-schema-version */ j->>'eventSchemaVersion' IS DISTINCT FROM n.schema_version THEN 'schema_version'
                WHEN /* guard OW018.envelope-aggregate-type */ j->>'aggregateType' IS DISTINCT FROM n.aggregate_type THEN 'aggregate_type'
                WHEN /* guard OW018.envelope-aggregate-id */ j->>'aggregateId' IS DISTINCT FROM n.aggregate_id THEN 'aggregate_id'
                WHEN /* guard OW018.envelope-aggregate-revision */ j->'aggregateRevision' IS DISTINCT FROM to_jsonb(n.aggregate_revision) THEN 'aggregate_revision'
                WHEN /* guard OW018.envelope-tenant-kind */ j->>'tenantKind' IS DISTINCT FROM n.tenant_kind THEN 'tenant_kind'
                WHEN /* guard OW018.envelope-tenant-id */ j->>'tenantId' IS DISTINCT FROM n.tenant_id THEN 'tenant_id'
                WHEN /* guard OW018.envelope-workspace-id */ j->>'workspaceId' IS DISTINCT FROM n.workspace_id THEN 'workspace_id'
                WHEN /* guard OW018.envelope-project-id */ j->>'projectId' IS DISTINCT FROM n.project_id THEN 'project_id'
                WHEN /* guard OW018.envelope-correlation-id */ j->>'correlationId' IS DISTINCT FROM n.correlation_id THEN 'correlation_id'
                WHEN /* guard OW018.envelope-causation-id */ j->>'causationId' IS DISTINCT FROM n.causation_id THEN 'causation_id'
                WHEN /* guard OW018.envelope-operation-id */ j->>'operationId' IS DISTINCT FROM n.operation_id THEN 'operation_id'
                WHEN /* guard OW018.envelope-event-payload */ j->'payload' IS DISTINCT FROM n.event_payload THEN 'event_payload'
                WHEN /* guard OW018.envelope-occurred-at */ CASE WHEN (j->>'occurredAt') ~ '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z$'
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
  IF /* guard OW018.event-contradicts-envelope */ bad.contradicts IS NOT NULL THEN
    RAISE EXCEPTION 'outbox: event % column % contradicts its envelope', bad.event_id, bad.contradicts
      USING ERRCODE = 'OW018';
  END IF;
  IF /* guard OWR03.event-id-archived */ bad.archived THEN
    RAISE EXCEPTION 'outbox: event % was archived by a retention run; its id cannot be appended again', bad.event_id
      USING ERRCODE = 'OWR03';
  END IF;
  IF /* guard OWP01.event-of-other-producer */ bad.producer <> v_database_producer THEN
    RAISE EXCEPTION 'outbox: event % (%) is produced by %, this database is the % fact store', bad.event_id, bad.event_type,
      bad.producer, v_database_producer USING ERRCODE = 'OWP01';
  END IF;
  RETURN NULL;
END
$fn$;

DROP FUNCTION outbox.outbox_events_not_archived();
DROP FUNCTION outbox.guard_event_producer();
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
-- Dynamic SQL: the definitions restored for 00099's Down are not live
-- definitions of the Up line (scripts/guards reads the whole file).
DO $down$
BEGIN
  EXECUTE $def$
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
$fn$ $def$;
  EXECUTE 'ALTER FUNCTION outbox.outbox_events_not_archived() OWNER TO oceanway_retention_definer';
  EXECUTE 'REVOKE ALL ON FUNCTION outbox.outbox_events_not_archived() FROM PUBLIC';
  EXECUTE 'GRANT EXECUTE ON FUNCTION outbox.outbox_events_not_archived() TO oceanway_producer, oceanway_outbox_definer, oceanway_retention_definer';
  EXECUTE $def$
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
$fn$ $def$;
END
$down$;
-- +goose StatementEnd
