-- name: AppendInsertEvents
-- One row per event, all frozen to the definition quadruple $1..$4 — and
-- only if that quadruple is the active definition, read under the
-- activation lock (taken shared here for the rest of the transaction). Zero
-- rows inserted means another definition is active: the caller re-reads it.
-- event_payload is extracted from the canonical envelope by the server, so
-- the two can never disagree.
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
       $1, $2, $3, $4,
       u.aggregate_type, u.aggregate_id, u.aggregate_revision,
       u.tenant_kind, u.tenant_id, u.workspace_id, u.project_id,
       u.correlation_id, u.causation_id, u.operation_id,
       u.event_envelope, (u.event_envelope::jsonb) -> 'payload',
       $5, u.event_envelope_sha256,
       u.occurred_at
  FROM unnest($6::uuid[], $7::text[], $8::text[], $9::text[], $10::text[], $11::bigint[],
              $12::text[], $13::text[], $14::text[], $15::text[], $16::text[], $17::text[], $18::text[],
              $19::text[], $20::text[], $21::timestamptz[])
    AS u(event_id, event_type, schema_version, aggregate_type, aggregate_id, aggregate_revision,
         tenant_kind, tenant_id, workspace_id, project_id, correlation_id, causation_id, operation_id,
         event_envelope, event_envelope_sha256, occurred_at)
 WHERE EXISTS (SELECT 1 FROM outbox.lock_active_definition() a
                WHERE a.delivery_set_version = $1 AND a.delivery_set_definition_schema_version = $2
                  AND a.delivery_set_definition_digest_algorithm_version = $3 AND a.delivery_set_definition_digest = $4)
