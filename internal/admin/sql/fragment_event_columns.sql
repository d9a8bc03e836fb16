-- Fragment: the event columns every lookup returns (alias e), named as
-- eventRow reads them.
e.event_id::text AS event_id, e.event_type, e.schema_version, e.aggregate_type, e.aggregate_id, e.aggregate_revision,
e.tenant_kind, e.tenant_id, e.workspace_id, e.correlation_id, e.causation_id, e.operation_id,
e.delivery_set_version, e.delivery_set_definition_schema_version,
e.delivery_set_definition_digest_algorithm_version, e.delivery_set_definition_digest,
e.event_envelope_digest_algorithm_version, e.event_envelope_sha256, e.event_envelope,
e.occurred_at, e.created_at, e.published_at
