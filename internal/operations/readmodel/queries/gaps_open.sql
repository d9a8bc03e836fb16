-- name: GapsOpen :many
-- Unresolved revision gaps (OPS-2) with the aggregate's current revision,
-- so a reader sees whether the missing revisions have arrived and the
-- waiting event only awaits its redelivery.
SELECT g.waiting_event_id, g.waiting_event_type, g.aggregate_type, g.aggregate_id, g.waiting_revision,
       g.applied_revision_at_detection, COALESCE(a.applied_revision, 0)::bigint AS applied_revision,
       g.detected_at, g.last_seen_at, g.seen_count
  FROM operations.revision_gaps g
  LEFT JOIN operations.projection_aggregates a
    ON a.projection_name = g.projection_name AND a.projection_version = g.projection_version
   AND a.aggregate_type = g.aggregate_type AND a.aggregate_id = g.aggregate_id
 WHERE g.projection_name = @projection_name AND g.projection_version = @projection_version AND g.resolved_at IS NULL
 ORDER BY g.detected_at, g.waiting_event_id
 LIMIT @row_limit;
