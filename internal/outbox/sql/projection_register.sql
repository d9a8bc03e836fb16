-- name: ProjectionRegister
INSERT INTO outbox.projection_versions (projection_name, projection_version)
VALUES ($1, $2)
ON CONFLICT (projection_name, projection_version) DO NOTHING
