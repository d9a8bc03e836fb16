-- name: RegistryInsertDefinition
-- Insert-or-compare, insert half: a concurrent registration of the same
-- version waits here and then finds the committed row (DO NOTHING).
INSERT INTO outbox.delivery_set_versions (
  delivery_set_version, delivery_set_definition_schema_version,
  delivery_set_definition_digest_algorithm_version, delivery_set_definition_digest,
  source_release, applicable_event_count, applicable_events, member_count, definition_canonical_json)
VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9)
ON CONFLICT DO NOTHING
RETURNING true
