-- name: RouteActiveList :many
-- The (event pair, destination) routes of the active definition: the
-- destinations a producer database can have deliveries for, so the
-- overview lists them with zeros before the first append.
SELECT DISTINCT m.event_type, m.schema_version, m.destination
  FROM outbox.delivery_set_members m
  JOIN outbox.delivery_set_versions v ON v.delivery_set_version = m.delivery_set_version
 WHERE v.status = 'active';
