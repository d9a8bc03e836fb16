-- name: ProjectionReady
SELECT ready_at IS NOT NULL FROM outbox.projection_versions
 WHERE projection_name = $1 AND projection_version = $2
 FOR SHARE
