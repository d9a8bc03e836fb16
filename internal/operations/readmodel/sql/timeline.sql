-- name: Timeline
-- The applied events of one operation, in occurrence order.
-- $1 projection name, $2 projection version, $3 run id.
SELECT e.event_id::text, e.event_type, e.event_schema_version, e.aggregate_type, e.aggregate_id, e.aggregate_revision,
       e.correlation_id::text, e.causation_id::text, e.operation_id::text, e.occurred_at, e.applied_at, e.projection_effect
  FROM operations.projected_events e
 WHERE e.projection_name = $1 AND e.projection_version = $2 AND e.run_id = $3
 ORDER BY e.occurred_at, e.applied_at, e.event_id
