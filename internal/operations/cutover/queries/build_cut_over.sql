-- name: BuildCutOver :execrows
-- The switch: the build becomes the active version (shadow tokens refused).
UPDATE operations.shadow_builds
   SET state = 'cut_over', readiness_proof_digest = @proof_digest, updated_at = now()
 WHERE projection_name = @projection_name AND projection_version = @projection_version AND state = 'catching_up';
