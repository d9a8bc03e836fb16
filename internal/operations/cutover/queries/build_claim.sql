-- name: BuildClaim :one
-- Claims the shadow build of a projection version: creates it, or takes it
-- over with a fresh claim token (the previous holder's writes are refused
-- from now on). A build that was cut over cannot be claimed again.
INSERT INTO operations.shadow_builds (projection_name, projection_version, state, claim_token, claim_owner)
VALUES (@projection_name, @projection_version, 'building', @token, @owner)
ON CONFLICT (projection_name, projection_version) DO UPDATE
   SET state = 'building', claim_token = excluded.claim_token, claim_owner = excluded.claim_owner, updated_at = now()
 WHERE operations.shadow_builds.state <> 'cut_over'
RETURNING claim_token;
