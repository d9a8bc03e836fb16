-- name: AggregateAdvance
-- Advances the aggregate by exactly one revision (compare-and-set on the
-- revision read under the lock). Loaded, not sqlc: it is queued in the
-- recordApplied batch with the other mutation statements.
UPDATE operations.projection_aggregates
   SET applied_revision = @revision, last_event_id = @event_id, updated_at = @now
 WHERE projection_name = @projection_name AND projection_version = @projection_version
   AND aggregate_type = @aggregate_type AND aggregate_id = @aggregate_id
   AND applied_revision = @revision - 1
