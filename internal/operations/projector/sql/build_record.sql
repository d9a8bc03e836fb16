-- name: BuildRecord
-- The projection build summary of this projector instance (OPS-1 step 6).
-- $1 build id, $2 projection name, $3 projection version, $4 consumer,
-- $5 worker version, $6 started at, $7 applied (0/1), $8 waited (0/1),
-- $9 event id (applied only), $10 event type (applied only), $11 now.
INSERT INTO operations.projection_builds AS b (build_id, projection_name, projection_version, consumer_name,
    worker_version, started_at, applied_count, waited_count, last_applied_at, last_event_id, last_event_type, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7::bigint, $8::bigint, CASE WHEN $7::bigint > 0 THEN $11::timestamptz END, $9, $10, $11::timestamptz)
ON CONFLICT (build_id, projection_name, projection_version) DO UPDATE
   SET applied_count = b.applied_count + EXCLUDED.applied_count,
       waited_count = b.waited_count + EXCLUDED.waited_count,
       last_applied_at = COALESCE(EXCLUDED.last_applied_at, b.last_applied_at),
       last_event_id = COALESCE(EXCLUDED.last_event_id, b.last_event_id),
       last_event_type = COALESCE(EXCLUDED.last_event_type, b.last_event_type),
       updated_at = EXCLUDED.updated_at
