-- name: ActivationLock :exec
-- The cutover lock: exclusive against every append (which holds it shared).
SELECT pg_advisory_xact_lock(outbox.activation_lock_key());

-- name: DefinitionByQuadruple :one
SELECT definition_canonical_json
  FROM outbox.delivery_set_versions
 WHERE delivery_set_version = @delivery_set_version
   AND delivery_set_definition_schema_version = @delivery_set_definition_schema_version
   AND delivery_set_definition_digest_algorithm_version = @delivery_set_definition_digest_algorithm_version
   AND delivery_set_definition_digest = @delivery_set_definition_digest;

-- name: DefinitionInsert :one
-- Insert-or-compare, insert half: a concurrent registration of the same
-- version waits here and then finds the committed row (DO NOTHING).
INSERT INTO outbox.delivery_set_versions (
  delivery_set_version, delivery_set_definition_schema_version,
  delivery_set_definition_digest_algorithm_version, delivery_set_definition_digest,
  source_release, applicable_event_count, applicable_events, member_count, definition_canonical_json)
VALUES (@delivery_set_version, @delivery_set_definition_schema_version,
  @delivery_set_definition_digest_algorithm_version, @delivery_set_definition_digest,
  sqlc.narg(source_release), @applicable_event_count, @applicable_events::jsonb, @member_count,
  @definition_canonical_json)
ON CONFLICT DO NOTHING
RETURNING true AS inserted;

-- name: DefinitionByVersion :one
SELECT delivery_set_version, delivery_set_definition_schema_version,
       delivery_set_definition_digest_algorithm_version, delivery_set_definition_digest,
       status, source_release, registered_at, activated_at, retired_at, definition_canonical_json
  FROM outbox.delivery_set_versions
 WHERE delivery_set_version = @delivery_set_version;

-- name: DefinitionActive :one
-- Lookup only (admin, inspection); appends use outbox.lock_active_definition().
SELECT delivery_set_version, delivery_set_definition_schema_version,
       delivery_set_definition_digest_algorithm_version, delivery_set_definition_digest,
       status, source_release, registered_at, activated_at, retired_at, definition_canonical_json
  FROM outbox.delivery_set_versions
 WHERE status = 'active';

-- name: DefinitionList :many
SELECT delivery_set_version, delivery_set_definition_schema_version,
       delivery_set_definition_digest_algorithm_version, delivery_set_definition_digest,
       status, source_release, registered_at, activated_at, retired_at, definition_canonical_json
  FROM outbox.delivery_set_versions
 ORDER BY delivery_set_version;

-- name: DefinitionLock :one
SELECT status FROM outbox.delivery_set_versions WHERE delivery_set_version = @delivery_set_version FOR UPDATE;

-- name: DefinitionRetireActive :many
UPDATE outbox.delivery_set_versions
   SET status = 'retired', retired_at = now()
 WHERE status = 'active' AND delivery_set_version <> @delivery_set_version
RETURNING delivery_set_version, delivery_set_definition_schema_version,
          delivery_set_definition_digest_algorithm_version, delivery_set_definition_digest;

-- name: DefinitionActivate :exec
UPDATE outbox.delivery_set_versions
   SET status = 'active', activated_at = now(), retired_at = NULL
 WHERE delivery_set_version = @delivery_set_version;
