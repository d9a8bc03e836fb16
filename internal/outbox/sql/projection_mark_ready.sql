-- name: ProjectionMarkReady
-- Marks a registered version ready once; a repeated mark with the same proof
-- is a no-op, a different proof is rejected by the immutability trigger.
UPDATE outbox.projection_versions
   SET ready_at = coalesce(ready_at, now()), readiness_proof_ref = $3
 WHERE projection_name = $1 AND projection_version = $2
RETURNING ready_at
