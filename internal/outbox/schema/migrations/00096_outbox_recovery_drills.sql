-- The recovery baseline: no deletion without a recorded restore drill (RET-1;
-- outbox document 保留与重建: "在隔离恢复环境完成归档校验与重放/恢复演练，并把
-- 归档摘要、运行时版本与演练证据写入受审计恢复基线").
--
-- outbox.retention_recovery_drills is the audited, insert-only recovery
-- baseline of this source database. A row is one successful restore drill of
-- one archive manifest in an isolated scratch database: the drill document
-- (RFC 8785 canonical bytes, content-addressed by its sha256) names the
-- manifest digest, the digest of the exact (event id, envelope digest) set
-- the manifest lists, the counts, the scratch database, the runtime versions
-- and that every restored row re-exported to the archived bytes. It is
-- written only by outbox.retention_record_drill, which derives every column
-- from the document and refuses a document that is not a successful drill.
--
-- outbox.retention_archive (00093) now refuses (OWR04) a run without a
-- recorded drill of the same manifest over the same event set: the previous
-- function is kept as outbox.retention_archive_unproven, executable only by
-- its owner, and the public signature checks the baseline and then calls it
-- in the same transaction.
--
-- The archived range is also made visible to projection rebuilds:
-- outbox.projection_archived_source_events lists the archived events whose
-- frozen definition routes them to a member that requires a projection (the
-- counterpart of 00092's projection_source_events, which reads hot events
-- only). A cutover refuses while it is not empty for its projection, so a
-- readiness proof can never cover fewer events than the source holds.

-- +goose Up
-- +goose StatementBegin
CREATE TABLE outbox.retention_recovery_drills (
  drill_sha256                   text        NOT NULL PRIMARY KEY CHECK (drill_sha256 ~ '^[0-9a-f]{64}$'),
  drill_digest_algorithm_version text        NOT NULL CHECK (drill_digest_algorithm_version = 'jcs-sha256-v1'),
  manifest_sha256                text        NOT NULL CHECK (manifest_sha256 ~ '^[0-9a-f]{64}$'),
  -- outbox.retention_event_set_sha256 of the manifest's events
  events_sha256                  text        NOT NULL CHECK (events_sha256 ~ '^[0-9a-f]{64}$'),
  events                         bigint      NOT NULL CHECK (events > 0),
  deliveries                     bigint      NOT NULL CHECK (deliveries >= 0),
  attempt_starts                 bigint      NOT NULL CHECK (attempt_starts >= 0),
  attempt_finishes               bigint      NOT NULL CHECK (attempt_finishes >= 0),
  scratch_database               text        NOT NULL,
  runtime_version                text        NOT NULL,
  drilled_at                     timestamptz NOT NULL,
  drill_document                 text        NOT NULL,
  recorded_at                    timestamptz NOT NULL DEFAULT now(),
  recorded_by                    text        NOT NULL DEFAULT session_user,
  recorded_txid                  xid8        NOT NULL DEFAULT pg_current_xact_id(),
  CONSTRAINT retention_recovery_drills_addressed
    CHECK (encode(sha256(convert_to(drill_document, 'UTF8')), 'hex') = drill_sha256)
);
CREATE INDEX retention_recovery_drills_manifest ON outbox.retention_recovery_drills (manifest_sha256, events_sha256);

CREATE TRIGGER /* guard OW003.drills-no-update */ retention_recovery_drills_immutable BEFORE UPDATE ON outbox.retention_recovery_drills
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_update();
CREATE TRIGGER /* guard OW002.drills-no-delete */ retention_recovery_drills_no_delete BEFORE DELETE ON outbox.retention_recovery_drills
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_delete();
CREATE TRIGGER /* guard OW002.drills-no-truncate */ retention_recovery_drills_no_truncate BEFORE TRUNCATE ON outbox.retention_recovery_drills
  FOR EACH STATEMENT EXECUTE FUNCTION outbox.reject_delete();

-- The digest of an archived event set: sha256 over "<event id> <envelope
-- sha256>" lines in event id order (internal/retention eventSetSHA256).
CREATE FUNCTION outbox.retention_event_set_sha256(p_event_ids uuid[], p_event_sha256 text[]) RETURNS text
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $fn$
  SELECT encode(sha256(convert_to(coalesce(string_agg(p.event_id::text || ' ' || p.sha, E'\n' ORDER BY p.event_id), ''), 'UTF8')), 'hex')
    FROM unnest(p_event_ids, p_event_sha256) AS p(event_id, sha)
$fn$;

-- Records one successful restore drill (insert-or-compare on its address;
-- the same document twice is one row). OWR05: not a successful drill
-- document, or a drill into this very database.
CREATE FUNCTION outbox.retention_record_drill(p_drill_document text) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  d   jsonb;
  sha text := encode(sha256(convert_to(p_drill_document, 'UTF8')), 'hex');
BEGIN
  BEGIN
    d := p_drill_document::jsonb;
  EXCEPTION WHEN /* guard OWR05.drill-document-not-json */ invalid_text_representation THEN
    RAISE EXCEPTION 'outbox: recovery drill document is not JSON' USING ERRCODE = 'OWR05';
  END;
  IF /* guard OWR05.drill-document-invalid */ jsonb_typeof(d) <> 'object' OR d->>'kind' IS DISTINCT FROM 'oceanway.outbox-recovery-drill@1'
     OR d->'reproduced' IS DISTINCT FROM 'true'::jsonb
     OR coalesce(d->>'manifestSha256', '') !~ '^[0-9a-f]{64}$'
     OR coalesce(d->>'eventsSha256', '') !~ '^[0-9a-f]{64}$'
     OR jsonb_typeof(d->'counts') IS DISTINCT FROM 'object'
     OR coalesce(d->>'scratchDatabase', '') = '' OR coalesce(d->>'runtimeVersion', '') = ''
     OR d->>'drilledAt' IS NULL THEN
    RAISE EXCEPTION 'outbox: not a successful recovery drill document (kind, reproduced, digests, counts, scratch database, runtime version, time)'
      USING ERRCODE = 'OWR05';
  END IF;
  -- isolation: the drill ran in a scratch database, not in the source (the
  -- drill itself refuses a target holding events or retention runs)
  IF /* guard OWR05.drill-in-source-database */ d->>'scratchDatabase' = current_database() THEN
    RAISE EXCEPTION 'outbox: recovery drill ran in the source database %', current_database() USING ERRCODE = 'OWR05';
  END IF;
  IF /* guard OWR05.drill-in-future */ (d->>'drilledAt')::timestamptz > now() THEN
    RAISE EXCEPTION 'outbox: recovery drill time is in the future' USING ERRCODE = 'OWR05';
  END IF;
  INSERT INTO outbox.retention_recovery_drills (drill_sha256, drill_digest_algorithm_version, manifest_sha256,
      events_sha256, events, deliveries, attempt_starts, attempt_finishes, scratch_database, runtime_version,
      drilled_at, drill_document)
  VALUES (sha, 'jcs-sha256-v1', d->>'manifestSha256', d->>'eventsSha256', (d->'counts'->>'events')::bigint,
      (d->'counts'->>'deliveries')::bigint, (d->'counts'->>'attemptStarts')::bigint,
      (d->'counts'->>'attemptFinishes')::bigint, d->>'scratchDatabase', d->>'runtimeVersion',
      (d->>'drilledAt')::timestamptz, p_drill_document)
  ON CONFLICT (drill_sha256) DO NOTHING;
  RETURN sha;
END
$fn$;

-- The rename runs as dynamic SQL: sqlc reads these migrations as schema and
-- does not follow ALTER FUNCTION ... RENAME (it would then see the new
-- retention_archive below as a duplicate).
DO $rename$
BEGIN
  EXECUTE 'ALTER FUNCTION outbox.retention_archive(uuid, text, timestamptz, timestamptz, uuid[], text[], bigint, bigint, bigint)'
    ' RENAME TO retention_archive_unproven';
  EXECUTE 'REVOKE EXECUTE ON FUNCTION outbox.retention_archive_unproven(uuid, text, timestamptz, timestamptz, uuid[], text[],'
    ' bigint, bigint, bigint) FROM oceanway_retention';
END
$rename$;

-- The controlled delete, now behind the recovery baseline. OWR04: no
-- recorded drill of this manifest over exactly these events and counts.
CREATE OR REPLACE FUNCTION outbox.retention_archive(
  p_run_id uuid, p_manifest_sha256 text, p_cutoff timestamptz, p_verified_at timestamptz,
  p_event_ids uuid[], p_event_sha256 text[],
  p_deliveries bigint, p_attempt_starts bigint, p_attempt_finishes bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  PERFORM 1 FROM outbox.retention_recovery_drills r
   WHERE r.manifest_sha256 = p_manifest_sha256
     AND r.events_sha256 = outbox.retention_event_set_sha256(p_event_ids, p_event_sha256)
     AND (r.events, r.deliveries, r.attempt_starts, r.attempt_finishes)
       = (cardinality(p_event_ids)::bigint, p_deliveries, p_attempt_starts, p_attempt_finishes);
  IF /* guard OWR04.no-recorded-drill */ NOT FOUND THEN
    RAISE EXCEPTION 'outbox: retention run % refused: no recorded recovery drill of manifest % over these events',
      p_run_id, p_manifest_sha256 USING ERRCODE = 'OWR04';
  END IF;
  PERFORM outbox.retention_archive_unproven(p_run_id, p_manifest_sha256, p_cutoff, p_verified_at,
    p_event_ids, p_event_sha256, p_deliveries, p_attempt_starts, p_attempt_finishes);
END
$fn$;

CREATE VIEW outbox.projection_archived_source_events AS
SELECT a.event_id,
       a.event_type,
       a.schema_version AS event_schema_version,
       a.event_envelope_digest_algorithm_version,
       a.event_envelope_sha256,
       a.delivery_set_version,
       a.run_id,
       m.destination,
       m.consumer_name,
       m.projection_name,
       m.projection_version
  FROM outbox.archived_events a
  JOIN outbox.delivery_set_members m
    ON m.delivery_set_version = a.delivery_set_version AND m.event_type = a.event_type
   AND m.schema_version = a.schema_version
 WHERE m.projection_target_state = 'required';

REVOKE ALL ON outbox.retention_recovery_drills, outbox.projection_archived_source_events FROM PUBLIC;
REVOKE ALL ON FUNCTION outbox.retention_record_drill(text),
  outbox.retention_archive(uuid, text, timestamptz, timestamptz, uuid[], text[], bigint, bigint, bigint) FROM PUBLIC;
GRANT SELECT ON outbox.retention_recovery_drills TO oceanway_retention, oceanway_retention_definer;
GRANT INSERT ON outbox.retention_recovery_drills TO oceanway_retention_definer;
ALTER FUNCTION outbox.retention_record_drill(text) OWNER TO oceanway_retention_definer;
ALTER FUNCTION outbox.retention_archive(uuid, text, timestamptz, timestamptz, uuid[], text[], bigint, bigint, bigint)
  OWNER TO oceanway_retention_definer;
GRANT EXECUTE ON FUNCTION outbox.retention_record_drill(text),
  outbox.retention_archive(uuid, text, timestamptz, timestamptz, uuid[], text[], bigint, bigint, bigint)
  TO oceanway_retention;
-- +goose StatementEnd
