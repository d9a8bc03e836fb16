-- name: BuildLock :one
-- The final transaction locks the build and re-reads its state, token and candidate.
SELECT state, claim_token, candidate_id
  FROM operations.shadow_builds
 WHERE projection_name = @projection_name AND projection_version = @projection_version
 FOR UPDATE;
