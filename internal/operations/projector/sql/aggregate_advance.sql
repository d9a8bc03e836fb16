-- name: AggregateAdvance
-- Advances the aggregate by exactly one revision (compare-and-set on the
-- revision read under the lock).
-- $1 projection name, $2 projection version, $3 aggregate type, $4 aggregate id,
-- $5 new revision, $6 event id, $7 now.
UPDATE operations.projection_aggregates
   SET applied_revision = $5, last_event_id = $6, updated_at = $7
 WHERE projection_name = $1 AND projection_version = $2 AND aggregate_type = $3 AND aggregate_id = $4
   AND applied_revision = $5 - 1
