-- name: ProjectedEventInsert
-- The projection mutation log row of an applied event (OPS-1 step 4).
-- $1 projection name, $2 projection version, $3 event id, $4 event type,
-- $5 schema version, $6 aggregate type, $7 aggregate id, $8 aggregate revision,
-- $9 run id, $10 reservation id, $11 correlation id, $12 causation id,
-- $13 operation id, $14 occurred at, $15 applied at, $16 effect.
INSERT INTO operations.projected_events (projection_name, projection_version, event_id, event_type,
    event_schema_version, aggregate_type, aggregate_id, aggregate_revision, run_id, billing_reservation_id,
    correlation_id, causation_id, operation_id, occurred_at, applied_at, projection_effect)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
