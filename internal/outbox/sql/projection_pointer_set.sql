-- name: ProjectionPointerSet
INSERT INTO outbox.projection_pointers (projection_name, projection_version, delivery_set_version)
VALUES ($1, $2, $3)
ON CONFLICT (projection_name) DO UPDATE
   SET projection_version = excluded.projection_version,
       delivery_set_version = excluded.delivery_set_version,
       switched_at = now()
