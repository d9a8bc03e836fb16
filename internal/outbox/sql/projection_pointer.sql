-- name: ProjectionPointer
SELECT projection_version FROM outbox.projection_pointers WHERE projection_name = $1 FOR UPDATE
