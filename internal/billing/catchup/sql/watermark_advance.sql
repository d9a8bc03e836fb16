-- Advances the watermark (its guard refuses anything but a higher state
-- version with inbox revision + 1).
UPDATE billing.settlement_input_watermarks
SET inbox_revision = inbox_revision + 1, settlement_input_snapshot_ref = @snapshot_ref,
    settlement_input_snapshot_schema_version = @snapshot_schema_version,
    settlement_input_snapshot_digest_algorithm_version = @snapshot_digest_algorithm_version,
    settlement_input_snapshot_digest = @snapshot_digest, settlement_input_state_version = @state_version,
    last_event_id = @event_id, updated_at = @now
WHERE billing_reservation_id = @billing_reservation_id AND settlement_dimension_id = @settlement_dimension_id
RETURNING inbox_revision
