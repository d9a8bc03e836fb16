-- The immutability guard of outbox_events compares the immutable columns
-- directly instead of serializing both row versions to jsonb on every
-- update (the published_at CAS is the only legal update and runs once per
-- event, in every ack transaction that completes an event). Same rule as
-- 00002: every column but published_at is immutable; published_at goes only
-- NULL → first completion time. A test updates every column but
-- published_at and expects OW001, so a column added later without joining
-- this list fails it.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION outbox.outbox_events_before_update() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF (NEW.event_id, NEW.event_type, NEW.schema_version, NEW.delivery_set_version,
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
    IF OLD.published_at IS NOT NULL THEN
      RAISE EXCEPTION 'outbox: published_at of event % cannot be reset, changed or overwritten', OLD.event_id
        USING ERRCODE = 'OW007';
    END IF;
    IF NOT outbox.all_mandatory_acknowledged(OLD.event_id) THEN
      RAISE EXCEPTION 'outbox: published_at of event % set before all mandatory deliveries were acknowledged', OLD.event_id
        USING ERRCODE = 'OW007';
    END IF;
  END IF;
  RETURN NEW;
END
$fn$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION outbox.outbox_events_before_update() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF (to_jsonb(NEW) - 'published_at') IS DISTINCT FROM (to_jsonb(OLD) - 'published_at') THEN
    RAISE EXCEPTION 'outbox: event % is immutable', OLD.event_id USING ERRCODE = 'OW001';
  END IF;
  IF NEW.published_at IS DISTINCT FROM OLD.published_at THEN
    IF OLD.published_at IS NOT NULL THEN
      RAISE EXCEPTION 'outbox: published_at of event % cannot be reset, changed or overwritten', OLD.event_id
        USING ERRCODE = 'OW007';
    END IF;
    IF NOT outbox.all_mandatory_acknowledged(OLD.event_id) THEN
      RAISE EXCEPTION 'outbox: published_at of event % set before all mandatory deliveries were acknowledged', OLD.event_id
        USING ERRCODE = 'OW007';
    END IF;
  END IF;
  RETURN NEW;
END
$fn$;
-- +goose StatementEnd
