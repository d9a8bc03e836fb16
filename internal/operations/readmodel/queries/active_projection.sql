-- name: ActiveProjection :one
-- The active version of a projection (DS-8 pointer, same core database),
-- read through the outbox-owned view outbox.active_projections (00090).
SELECT projection_version FROM outbox.active_projections WHERE projection_name = @projection_name;
