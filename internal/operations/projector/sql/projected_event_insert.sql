-- name: ProjectedEventInsert
-- The projection mutation log row of an applied event (OPS-1 step 4).
-- Loaded, not sqlc: queued in the recordApplied batch.
INSERT INTO operations.projected_events (projection_name, projection_version, event_id, event_type,
    event_schema_version, aggregate_type, aggregate_id, aggregate_revision, run_id, billing_reservation_id,
    correlation_id, causation_id, operation_id, occurred_at, applied_at, projection_effect)
VALUES (@projection_name, @projection_version, @event_id, @event_type, @event_schema_version, @aggregate_type,
    @aggregate_id, @aggregate_revision, @run_id, @billing_reservation_id, @correlation_id, @causation_id,
    @operation_id, @occurred_at, @applied_at, @projection_effect)
