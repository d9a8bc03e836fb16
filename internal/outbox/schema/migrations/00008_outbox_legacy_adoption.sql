-- Adopting a legacy outbox (OB-BOOT-1).
--
-- A legacy outbox table (events with their envelope and published_at, no
-- digest, no delivery set, no delivery rows; docs/examples/legacy-outbox.sql)
-- is adopted by `oceanway migrate --adopt-legacy` (internal/legacy):
--
--   * outbox.bootstrap_definitions marks the registered, immutable Bootstrap
--     Delivery Set Version (full quadruple in delivery_set_versions). Its
--     members are all mandatory=false: an event the legacy system already
--     published is adopted with no delivery row (never redelivered, never
--     counted as acknowledged by a consumer that holds no receipt for it).
--     It is never activated.
--   * outbox.adopt_legacy_published is the only path that inserts an event
--     freezing a bootstrap version: it records the adoption (legacy row, the
--     contracts-computed digest, the legacy published_at as evidence),
--     inserts the event, and marks it published at adoption time (an event
--     cannot be inserted published, OW012, and published_at >= created_at).
--     prove_delivery_set accepts a non-active definition only for an event
--     adopted so in the same transaction under a bootstrap version; the
--     delivery-row equality (zero mandatory members, zero rows) is still
--     proved.
--   * an open legacy event is appended through the ordinary append path under
--     the active definition (pending delivery rows the dispatcher delivers)
--     and recorded in outbox.legacy_adoptions as class open.
--   * outbox.legacy_quarantine keeps every legacy row that cannot be adopted,
--     keyed by the legacy row, with its reason class: visible, never dropped.
--
-- All three tables are insert-only.

-- +goose Up
CREATE TABLE outbox.bootstrap_definitions (
  delivery_set_version bigint      NOT NULL PRIMARY KEY REFERENCES outbox.delivery_set_versions,
  legacy_source        text        NOT NULL CHECK (legacy_source <> ''),
  recorded_at          timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE outbox.legacy_adoptions (
  legacy_source                           text        NOT NULL CHECK (legacy_source <> ''),
  legacy_row_id                           bigint      NOT NULL,
  event_id                                uuid        NOT NULL REFERENCES outbox.outbox_events,
  class                                   text        NOT NULL CHECK (class IN ('published', 'open')),
  legacy_published_at                     timestamptz,
  event_envelope_digest_algorithm_version text        NOT NULL CHECK (event_envelope_digest_algorithm_version = 'jcs-sha256-v1'),
  event_envelope_sha256                   text        NOT NULL CHECK (event_envelope_sha256 ~ '^[0-9a-f]{64}$'),
  delivery_set_version                    bigint      NOT NULL REFERENCES outbox.delivery_set_versions,
  adopted_at                              timestamptz NOT NULL DEFAULT now(),
  adopted_txid                            xid8        NOT NULL DEFAULT pg_current_xact_id(),
  PRIMARY KEY (legacy_source, legacy_row_id),
  CONSTRAINT legacy_adoptions_published_at CHECK ((class = 'published') = (legacy_published_at IS NOT NULL))
);
CREATE INDEX legacy_adoptions_event ON outbox.legacy_adoptions (event_id);

CREATE TABLE outbox.legacy_quarantine (
  legacy_source                           text        NOT NULL CHECK (legacy_source <> ''),
  legacy_row_id                           bigint      NOT NULL,
  legacy_event_id                         text,
  reason_class                            text        NOT NULL CHECK (reason_class IN
                                            ('unparseable_envelope', 'unsupported_schema', 'digest_conflict')),
  reason                                  text        NOT NULL CHECK (reason <> ''),
  -- the contracts digest when the envelope parsed (digest_conflict), else NULL
  event_envelope_digest_algorithm_version text        CHECK (event_envelope_digest_algorithm_version = 'jcs-sha256-v1'),
  event_envelope_sha256                   text        CHECK (event_envelope_sha256 ~ '^[0-9a-f]{64}$'),
  conflicting_sha256                      text        CHECK (conflicting_sha256 ~ '^[0-9a-f]{64}$'),
  legacy_envelope                         text        NOT NULL,
  legacy_published_at                     timestamptz,
  quarantined_at                          timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (legacy_source, legacy_row_id),
  CONSTRAINT legacy_quarantine_digest_pair CHECK (
    (event_envelope_digest_algorithm_version IS NULL) = (event_envelope_sha256 IS NULL)),
  CONSTRAINT legacy_quarantine_conflict_has_digests CHECK (
    reason_class <> 'digest_conflict' OR (event_envelope_sha256 IS NOT NULL AND conflicting_sha256 IS NOT NULL))
);

CREATE TRIGGER /* guard OW003.bootstrap-no-update */ bootstrap_definitions_immutable BEFORE UPDATE ON outbox.bootstrap_definitions
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_update();
CREATE TRIGGER /* guard OW002.bootstrap-no-delete */ bootstrap_definitions_no_delete BEFORE DELETE ON outbox.bootstrap_definitions
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_delete();
CREATE TRIGGER /* guard OW002.bootstrap-no-truncate */ bootstrap_definitions_no_truncate BEFORE TRUNCATE ON outbox.bootstrap_definitions
  FOR EACH STATEMENT EXECUTE FUNCTION outbox.reject_delete();
CREATE TRIGGER /* guard OW003.adoptions-no-update */ legacy_adoptions_immutable BEFORE UPDATE ON outbox.legacy_adoptions
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_update();
CREATE TRIGGER /* guard OW002.adoptions-no-delete */ legacy_adoptions_no_delete BEFORE DELETE ON outbox.legacy_adoptions
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_delete();
CREATE TRIGGER /* guard OW002.adoptions-no-truncate */ legacy_adoptions_no_truncate BEFORE TRUNCATE ON outbox.legacy_adoptions
  FOR EACH STATEMENT EXECUTE FUNCTION outbox.reject_delete();
CREATE TRIGGER /* guard OW003.legacy-quarantine-no-update */ legacy_quarantine_immutable BEFORE UPDATE ON outbox.legacy_quarantine
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_update();
CREATE TRIGGER /* guard OW002.legacy-quarantine-no-delete */ legacy_quarantine_no_delete BEFORE DELETE ON outbox.legacy_quarantine
  FOR EACH ROW EXECUTE FUNCTION outbox.reject_delete();
CREATE TRIGGER /* guard OW002.legacy-quarantine-no-truncate */ legacy_quarantine_no_truncate BEFORE TRUNCATE ON outbox.legacy_quarantine
  FOR EACH STATEMENT EXECUTE FUNCTION outbox.reject_delete();

-- +goose StatementBegin
-- The only path to an event that freezes a bootstrap version. The columns
-- are taken from the stored canonical envelope (outbox_events_envelope
-- checks them again); the caller computed p_sha256 with the contracts.
CREATE FUNCTION outbox.adopt_legacy_published(
  p_legacy_source text, p_legacy_row_id bigint, p_event_envelope text, p_sha256 text,
  p_legacy_published_at timestamptz, p_delivery_set_version bigint) RETURNS uuid
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  j    jsonb := p_event_envelope::jsonb;
  v_id uuid  := (j->>'eventId')::uuid;
BEGIN
  IF /* guard OW006.not-bootstrap-definition */ NOT EXISTS (SELECT 1 FROM outbox.bootstrap_definitions b WHERE b.delivery_set_version = p_delivery_set_version) THEN
    RAISE EXCEPTION 'outbox: definition % is not a bootstrap delivery set version', p_delivery_set_version
      USING ERRCODE = 'OW006';
  END IF;
  IF /* guard OW012.legacy-not-published */ p_legacy_published_at IS NULL THEN
    RAISE EXCEPTION 'outbox: legacy row %/% is not published', p_legacy_source, p_legacy_row_id
      USING ERRCODE = 'OW012';
  END IF;
  INSERT INTO outbox.outbox_events (event_id, event_type, schema_version, delivery_set_version,
      delivery_set_definition_schema_version, delivery_set_definition_digest_algorithm_version,
      delivery_set_definition_digest, aggregate_type, aggregate_id, aggregate_revision, tenant_kind, tenant_id,
      workspace_id, project_id, correlation_id, causation_id, operation_id, event_envelope, event_payload,
      event_envelope_digest_algorithm_version, event_envelope_sha256, occurred_at)
  SELECT v_id, j->>'eventType', j->>'eventSchemaVersion', v.delivery_set_version,
         v.delivery_set_definition_schema_version, v.delivery_set_definition_digest_algorithm_version,
         v.delivery_set_definition_digest, j->>'aggregateType', j->>'aggregateId', (j->>'aggregateRevision')::bigint,
         j->>'tenantKind', j->>'tenantId', j->>'workspaceId', j->>'projectId', j->>'correlationId',
         j->>'causationId', j->>'operationId', p_event_envelope, j->'payload', 'jcs-sha256-v1', p_sha256,
         (j->>'occurredAt')::timestamptz
    FROM outbox.delivery_set_versions v
   WHERE v.delivery_set_version = p_delivery_set_version;
  INSERT INTO outbox.legacy_adoptions (legacy_source, legacy_row_id, event_id, class, legacy_published_at,
      event_envelope_digest_algorithm_version, event_envelope_sha256, delivery_set_version)
  VALUES (p_legacy_source, p_legacy_row_id, v_id, 'published', p_legacy_published_at,
      'jcs-sha256-v1', p_sha256, p_delivery_set_version);
  -- no mandatory member, so no delivery row: published at adoption time
  UPDATE outbox.outbox_events SET published_at = now() WHERE event_id = v_id;
  RETURN v_id;
END
$fn$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION outbox.adopt_legacy_published(text, bigint, text, text, timestamptz, bigint) FROM PUBLIC;
GRANT SELECT ON outbox.bootstrap_definitions, outbox.legacy_adoptions, outbox.legacy_quarantine
  TO oceanway_outbox_definer, oceanway_dispatcher;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION outbox.prove_delivery_set() RETURNS trigger
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
  -- Legacy adoption (OB-BOOT-1, 00008): a published legacy event adopted in
  -- this very transaction by outbox.adopt_legacy_published freezes a
  -- registered Bootstrap Delivery Set Version, which is never active.
  IF v_active IS NOT TRUE AND EXISTS (
       SELECT 1 FROM outbox.legacy_adoptions a
         JOIN outbox.bootstrap_definitions b USING (delivery_set_version)
        WHERE a.event_id = NEW.event_id AND a.delivery_set_version = NEW.delivery_set_version
          AND a.adopted_txid = pg_current_xact_id()) THEN
    SELECT true, v.applicable_events @> jsonb_build_array(jsonb_build_object(
             'eventType', NEW.event_type, 'eventSchemaVersion', NEW.schema_version))
      INTO v_active, v_applicable
      FROM outbox.delivery_set_versions v
     WHERE v.delivery_set_version = NEW.delivery_set_version;
  END IF;
  -- The event's foreign key makes the whole quadruple equal to this row's.
  IF /* guard OW006.definition-not-active */ v_active IS NOT TRUE THEN
    RAISE EXCEPTION 'outbox: event % froze delivery set definition % which is not the active definition',
      NEW.event_id, NEW.delivery_set_version USING ERRCODE = 'OW006';
  END IF;
  IF /* guard OW006.pair-not-applicable */ NOT v_applicable THEN
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
  IF /* guard OW004.delivery-set-mismatch */ v_matched <> v_members OR v_deliveries <> v_members THEN
    RAISE EXCEPTION 'outbox: event % delivery set mismatch: % mandatory members, % delivery rows, % matching',
      NEW.event_id, v_members, v_deliveries, v_matched USING ERRCODE = 'OW004';
  END IF;
  RETURN NULL;
END
$fn$;
-- +goose StatementEnd
