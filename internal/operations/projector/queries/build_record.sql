-- name: BuildRecord :exec
-- The projection build summary of this projector instance (OPS-1 step 6).
-- applied_count/waited_count are the events of one transaction (one event,
-- or a batch); last_event_id and last_event_type are set when one applied.
INSERT INTO operations.projection_builds AS b (build_id, projection_name, projection_version, consumer_name,
    worker_version, started_at, applied_count, waited_count, last_applied_at, last_event_id, last_event_type, updated_at)
VALUES (@build_id, @projection_name, @projection_version, @consumer_name, @worker_version, @started_at,
    @applied_count::bigint, @waited_count::bigint,
    CASE WHEN @applied_count::bigint > 0 THEN @now::timestamptz END,
    sqlc.narg(last_event_id), sqlc.narg(last_event_type), @now::timestamptz)
ON CONFLICT (build_id, projection_name, projection_version) DO UPDATE
   SET applied_count = b.applied_count + EXCLUDED.applied_count,
       waited_count = b.waited_count + EXCLUDED.waited_count,
       last_applied_at = COALESCE(EXCLUDED.last_applied_at, b.last_applied_at),
       last_event_id = COALESCE(EXCLUDED.last_event_id, b.last_event_id),
       last_event_type = COALESCE(EXCLUDED.last_event_type, b.last_event_type),
       updated_at = EXCLUDED.updated_at;
