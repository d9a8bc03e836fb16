-- name: RegistryListDefinitions
SELECT delivery_set_version, delivery_set_definition_schema_version,
       delivery_set_definition_digest_algorithm_version, delivery_set_definition_digest,
       status, source_release, registered_at, activated_at, retired_at, definition_canonical_json
  FROM outbox.delivery_set_versions
 ORDER BY delivery_set_version
