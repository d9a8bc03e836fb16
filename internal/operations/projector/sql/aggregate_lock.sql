-- name: AggregateLock
-- Locks the projection aggregate for the rest of the transaction and returns
-- its highest contiguous applied revision (OPS-1 steps 2-3).
-- Loaded, not sqlc: batched after AggregateEnsure (one round trip).
SELECT applied_revision
  FROM operations.projection_aggregates
 WHERE projection_name = @projection_name AND projection_version = @projection_version
   AND aggregate_type = @aggregate_type AND aggregate_id = @aggregate_id
   FOR UPDATE
