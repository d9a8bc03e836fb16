-- name: DefinitionByQuadruple
SELECT definition_canonical_json
  FROM outbox.delivery_set_versions
 WHERE delivery_set_version = $1
   AND delivery_set_definition_schema_version = $2
   AND delivery_set_definition_digest_algorithm_version = $3
   AND delivery_set_definition_digest = $4
