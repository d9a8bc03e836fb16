-- name: RegistryRetireActive
UPDATE outbox.delivery_set_versions
   SET status = 'retired', retired_at = now()
 WHERE status = 'active' AND delivery_set_version <> $1
RETURNING delivery_set_version, delivery_set_definition_schema_version,
          delivery_set_definition_digest_algorithm_version, delivery_set_definition_digest
