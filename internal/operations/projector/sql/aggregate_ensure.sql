-- name: AggregateEnsure
-- Creates the projection aggregate row if it does not exist yet (OPS-1 step 2).
-- Loaded, not sqlc: batched with AggregateLock (one round trip).
INSERT INTO operations.projection_aggregates (projection_name, projection_version, aggregate_type, aggregate_id,
    applied_revision, created_at, updated_at)
VALUES (@projection_name, @projection_version, @aggregate_type, @aggregate_id, 0, @now, @now)
ON CONFLICT DO NOTHING
