-- name: AggregateEnsure
-- Creates the projection aggregate row if it does not exist yet (OPS-1 step 2).
-- $1 projection name, $2 projection version, $3 aggregate type, $4 aggregate id, $5 now.
INSERT INTO operations.projection_aggregates (projection_name, projection_version, aggregate_type, aggregate_id,
    applied_revision, created_at, updated_at)
VALUES ($1, $2, $3, $4, 0, $5, $5)
ON CONFLICT DO NOTHING
