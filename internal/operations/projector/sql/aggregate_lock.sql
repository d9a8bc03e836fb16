-- name: AggregateLock
-- Locks the projection aggregate for the rest of the transaction and returns
-- its highest contiguous applied revision (OPS-1 steps 2-3).
-- $1 projection name, $2 projection version, $3 aggregate type, $4 aggregate id.
SELECT applied_revision
  FROM operations.projection_aggregates
 WHERE projection_name = $1 AND projection_version = $2 AND aggregate_type = $3 AND aggregate_id = $4
   FOR UPDATE
