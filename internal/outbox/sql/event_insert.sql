-- One row per event, all frozen to the definition quadruple — and only if
-- that quadruple is the active definition, read under the activation lock
-- (taken shared here for the rest of the transaction). Zero rows inserted
-- means another definition is active: the caller re-reads it.
-- event_payload is extracted from the canonical envelope by the server, so
-- the two can never disagree. Queued with delivery_insert in one batch (one
-- round trip), which is why it is not a sqlc query.
-- uuid arrays are bound as text[] and cast here: pgx has no binary plan for
-- []string into uuid[] and would fail one (and format an error) per call
-- before falling back to text.
INSERT INTO outbox.outbox_events (
  event_id, event_type, schema_version,
  delivery_set_version, delivery_set_definition_schema_version,
  delivery_set_definition_digest_algorithm_version, delivery_set_definition_digest,
  aggregate_type, aggregate_id, aggregate_revision,
  tenant_kind, tenant_id, workspace_id, project_id,
  correlation_id, causation_id, operation_id,
  event_envelope, event_payload,
  event_envelope_digest_algorithm_version, event_envelope_sha256,
  occurred_at)
SELECT u.event_id, u.event_type, u.schema_version,
       @delivery_set_version, @delivery_set_definition_schema_version,
       @delivery_set_definition_digest_algorithm_version, @delivery_set_definition_digest,
       u.aggregate_type, u.aggregate_id, u.aggregate_revision,
       u.tenant_kind, u.tenant_id, u.workspace_id, u.project_id,
       u.correlation_id, u.causation_id, u.operation_id,
       u.event_envelope, (u.event_envelope::jsonb) -> 'payload',
       @event_envelope_digest_algorithm_version, u.event_envelope_sha256,
       u.occurred_at
  FROM unnest(@event_ids::text[]::uuid[], @event_types::text[], @schema_versions::text[], @aggregate_types::text[],
              @aggregate_ids::text[], @aggregate_revisions::bigint[],
              @tenant_kinds::text[], @tenant_ids::text[], @workspace_ids::text[], @project_ids::text[],
              @correlation_ids::text[], @causation_ids::text[], @operation_ids::text[],
              @event_envelopes::text[], @event_envelope_sha256s::text[], @occurred_ats::timestamptz[])
    AS u(event_id, event_type, schema_version, aggregate_type, aggregate_id, aggregate_revision,
         tenant_kind, tenant_id, workspace_id, project_id, correlation_id, causation_id, operation_id,
         event_envelope, event_envelope_sha256, occurred_at)
 WHERE {{frozen_definition_is_active}}
