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
-- The three row-level functions 00099 left unused for its Down migration
-- (outbox.outbox_events_check_envelope, outbox.outbox_events_not_archived,
-- outbox.guard_event_producer) stay: no trigger executes them, so their
-- RAISEs refuse nothing and carry no marker; the rules they held are the
-- clauses of check_appended_events below.
--
-- outbox.retention_archive_unproven (00093's retention_archive, renamed by
-- 00096) is restated with its clause markers; see below.
-- outbox.record_publication (00095) is restated without its argument
-- check, which the batch function it calls owns; see below.

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


-- The controlled delete's own checks (00093), renamed
-- outbox.retention_archive_unproven by 00096 with dynamic SQL (so the clause
-- index, which reads the migrations, does not see that name's definition):
-- restated here unchanged but for the clause markers on each refusal, the
-- reasons of its not-closed check included. CREATE OR REPLACE keeps its
-- owner (oceanway_retention_definer) and its grants (none but the owner's).
CREATE OR REPLACE FUNCTION outbox.retention_archive_unproven(
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
  IF /* guard OWR02.archive-digest-per-event */ v_events IS NULL OR v_events = 0 OR v_events <> cardinality(p_event_sha256) THEN
    RAISE EXCEPTION 'outbox: retention run % needs one archived digest per event', p_run_id USING ERRCODE = 'OWR02';
  END IF;
  IF /* guard OWR02.archive-event-twice */ (SELECT count(DISTINCT e) FROM unnest(p_event_ids) e) <> v_events THEN
    RAISE EXCEPTION 'outbox: retention run % lists an event twice', p_run_id USING ERRCODE = 'OWR02';
  END IF;
  IF /* guard OWR01.archive-time-in-future */ p_cutoff > now() OR p_verified_at > now() THEN
    RAISE EXCEPTION 'outbox: retention run % has a cutoff or verification time in the future', p_run_id
      USING ERRCODE = 'OWR01';
  END IF;

  -- Refuse the first event that is not closed. Closed is final (published_at
  -- is set once, acknowledged is terminal, a quarantine row needs a
  -- quarantined delivery), and the advisory lock above serializes runs.
  SELECT p.event_id::text || ': ' || CASE
           WHEN /* guard OWR01.event-not-hot */ e.event_id IS NULL THEN 'not in the hot table'
           WHEN /* guard OWR01.event-unpublished */ e.published_at IS NULL THEN 'unpublished'
           WHEN /* guard OWR01.event-after-cutoff */ e.created_at >= p_cutoff THEN 'created after the cutoff'
           WHEN /* guard OWR01.event-quarantined */ EXISTS (SELECT 1 FROM outbox.outbox_quarantine q WHERE q.event_id = e.event_id) THEN 'quarantined'
           WHEN /* guard OWR01.event-open-delivery */ EXISTS (SELECT 1 FROM outbox.outbox_deliveries d
                         WHERE d.event_id = e.event_id AND d.status <> 'acknowledged') THEN 'open delivery'
           WHEN /* guard OWR01.event-legacy-adoption */ EXISTS (SELECT 1 FROM outbox.legacy_adoptions a WHERE a.event_id = e.event_id) THEN 'legacy adoption record'
           WHEN /* guard OWR02.event-digest-differs */ e.event_envelope_sha256 <> p.sha THEN 'archived digest differs from the stored envelope digest'
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
  IF /* guard OWR01.event-not-closed */ v_bad IS NOT NULL THEN
    RAISE EXCEPTION 'outbox: retention run % refused: event %', p_run_id, v_bad
      USING ERRCODE = CASE WHEN v_bad LIKE '%archived digest%' THEN 'OWR02' ELSE 'OWR01' END;
  END IF;

  SELECT count(*) INTO v_deliveries FROM outbox.outbox_deliveries d WHERE d.event_id = ANY (p_event_ids);
  SELECT count(*) INTO v_starts FROM outbox.outbox_delivery_attempt_starts s WHERE s.event_id = ANY (p_event_ids);
  SELECT count(*) INTO v_finishes FROM outbox.outbox_delivery_attempt_finishes f
    JOIN outbox.outbox_delivery_attempt_starts s USING (attempt_id) WHERE s.event_id = ANY (p_event_ids);
  IF /* guard OWR02.archive-counts-differ */ (v_deliveries, v_starts, v_finishes) IS DISTINCT FROM (p_deliveries, p_attempt_starts, p_attempt_finishes) THEN
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
  IF /* guard OWR02.removed-finishes-differ */ v_n <> v_finishes THEN
    RAISE EXCEPTION 'outbox: retention run % removed % attempt finishes, expected %', p_run_id, v_n, v_finishes
      USING ERRCODE = 'OWR02';
  END IF;
  DELETE FROM outbox.outbox_delivery_attempt_starts s WHERE s.event_id = ANY (p_event_ids);
  GET DIAGNOSTICS v_n = ROW_COUNT;
  IF /* guard OWR02.removed-starts-differ */ v_n <> v_starts THEN
    RAISE EXCEPTION 'outbox: retention run % removed % attempt starts, expected %', p_run_id, v_n, v_starts
      USING ERRCODE = 'OWR02';
  END IF;
  DELETE FROM outbox.outbox_deliveries d WHERE d.event_id = ANY (p_event_ids);
  GET DIAGNOSTICS v_n = ROW_COUNT;
  IF /* guard OWR02.removed-deliveries-differ */ v_n <> v_deliveries THEN
    RAISE EXCEPTION 'outbox: retention run % removed % deliveries, expected %', p_run_id, v_n, v_deliveries
      USING ERRCODE = 'OWR02';
  END IF;
  DELETE FROM outbox.outbox_events e WHERE e.event_id = ANY (p_event_ids);
  GET DIAGNOSTICS v_n = ROW_COUNT;
  IF /* guard OWR02.removed-events-differ */ v_n <> v_events THEN
    RAISE EXCEPTION 'outbox: retention run % removed % events, expected %', p_run_id, v_n, v_events
      USING ERRCODE = 'OWR02';
  END IF;
END
$fn$;
-- The one-ack function (00095) loses one clause no test can tell apart
-- from its absence: its own "every argument is required" check (OW009). It
-- passes each argument as a one-element array to
-- outbox.record_publication_batch, which refuses an array holding a NULL
-- with the same SQLSTATE and the same message (clause
-- OW009.publication-batch-arguments, 00097): that check owns the rule.
CREATE OR REPLACE FUNCTION outbox.record_publication(
  p_event_id                                    uuid,
  p_destination                                 text,
  p_consumer_name                               text,
  p_attempt_id                                  uuid,
  p_lease_token                                 uuid,
  p_ack_receipt_type                            text,
  p_ack_receipt_key                             text,
  p_ack_receipt_schema_version                  text,
  p_ack_receipt_digest_algorithm_version        text,
  p_ack_receipt_digest                          text,
  p_ack_event_envelope_digest_algorithm_version text,
  p_ack_event_envelope_sha256                   text)
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_result text;
BEGIN
  IF /* guard OW013.record-publication-isolation */ current_setting('transaction_isolation') <> 'read committed' THEN
    RAISE EXCEPTION 'outbox.record_publication runs under READ COMMITTED, not %', current_setting('transaction_isolation')
      USING ERRCODE = 'OW013';
  END IF;
  SELECT r.result INTO v_result
    FROM outbox.record_publication_batch(ARRAY[p_event_id], ARRAY[p_destination], ARRAY[p_consumer_name], ARRAY[p_attempt_id],
      ARRAY[p_lease_token], ARRAY[p_ack_receipt_type], ARRAY[p_ack_receipt_key], ARRAY[p_ack_receipt_schema_version],
      ARRAY[p_ack_receipt_digest_algorithm_version], ARRAY[p_ack_receipt_digest],
      ARRAY[p_ack_event_envelope_digest_algorithm_version], ARRAY[p_ack_event_envelope_sha256]) r;
  RETURN v_result;
END
$fn$;
-- +goose StatementEnd
