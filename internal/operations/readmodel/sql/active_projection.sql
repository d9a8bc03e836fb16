-- name: ActiveProjection
-- The active version of a projection (DS-8 pointer, same core database).
-- $1 projection name.
SELECT projection_version FROM outbox.projection_pointers WHERE projection_name = $1
