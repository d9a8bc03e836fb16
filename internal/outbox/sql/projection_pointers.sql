-- name: ProjectionPointers
SELECT projection_name, projection_version, delivery_set_version, switched_at
  FROM outbox.projection_pointers ORDER BY projection_name
