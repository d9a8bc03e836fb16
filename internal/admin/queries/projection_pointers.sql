-- name: ProjectionPointerList :many
-- The active projection version per projection and the definition it was
-- switched with, read through the outbox-owned view outbox.active_projections.
SELECT p.projection_name, p.projection_version, p.delivery_set_version, p.switched_at
  FROM outbox.active_projections p
 ORDER BY p.projection_name;
