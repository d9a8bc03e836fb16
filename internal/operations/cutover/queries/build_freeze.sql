-- name: BuildFreeze :one
-- Binds the new shadow claim token and the frozen candidate to the paused
-- build: from now on only the catch-up holding this token may write, and only
-- events of the candidate (operations.shadow_fence).
UPDATE operations.shadow_builds
   SET state = 'catching_up', claim_token = @token, candidate_id = @candidate_id, updated_at = now()
 WHERE projection_name = @projection_name AND projection_version = @projection_version AND state = 'paused'
RETURNING claim_token;
