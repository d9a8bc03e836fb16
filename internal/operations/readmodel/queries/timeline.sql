-- name: Timeline :many
-- The applied events of one operation, in occurrence order.
SELECT e.event_id, e.event_type, e.event_schema_version, e.aggregate_type, e.aggregate_id, e.aggregate_revision,
       e.correlation_id, e.causation_id, e.operation_id, e.occurred_at, e.applied_at, e.projection_effect
  FROM operations.projected_events e
 WHERE e.projection_name = @projection_name AND e.projection_version = @projection_version AND e.run_id = @run_id
 ORDER BY e.occurred_at, e.applied_at, e.event_id;
