-- name: ProjectionRegister :exec
INSERT INTO outbox.projection_versions (projection_name, projection_version)
VALUES (@projection_name, @projection_version)
ON CONFLICT (projection_name, projection_version) DO NOTHING;

-- name: ProjectionMarkReady :one
-- Marks a registered version ready once; a repeated mark with the same proof
-- is a no-op, a different proof is rejected by the immutability trigger.
UPDATE outbox.projection_versions
   SET ready_at = coalesce(ready_at, now()), readiness_proof_ref = @readiness_proof_ref
 WHERE projection_name = @projection_name AND projection_version = @projection_version
RETURNING ready_at;

-- name: ProjectionReady :one
SELECT (ready_at IS NOT NULL)::boolean AS ready FROM outbox.projection_versions
 WHERE projection_name = @projection_name AND projection_version = @projection_version
 FOR SHARE;

-- name: ProjectionPointer :one
SELECT projection_version FROM outbox.projection_pointers WHERE projection_name = @projection_name FOR UPDATE;

-- name: ProjectionPointerSet :exec
INSERT INTO outbox.projection_pointers (projection_name, projection_version, delivery_set_version)
VALUES (@projection_name, @projection_version, @delivery_set_version)
ON CONFLICT (projection_name) DO UPDATE
   SET projection_version = excluded.projection_version,
       delivery_set_version = excluded.delivery_set_version,
       switched_at = now();

-- name: ProjectionPointers :many
SELECT projection_name, projection_version, delivery_set_version, switched_at
  FROM outbox.projection_pointers ORDER BY projection_name;
