-- name: BuildPause :one
-- Cutover step 1: pause the shadow claim. The UPDATE waits for every
-- in-flight shadow transaction (each holds the row FOR SHARE through
-- operations.shadow_fence): when it returns, the shadow claim is drained, and
-- after commit every shadow write is refused until the freeze binds a new token.
UPDATE operations.shadow_builds SET state = 'paused', updated_at = now()
 WHERE projection_name = @projection_name AND projection_version = @projection_version
   AND state IN ('building', 'catching_up')
RETURNING claim_token;
