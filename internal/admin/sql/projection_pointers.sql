-- The active projection version per projection and the definition it was
-- switched with.
SELECT p.projection_name, p.projection_version, p.delivery_set_version, p.switched_at
  FROM outbox.projection_pointers p
 ORDER BY p.projection_name
