-- name: SummaryLinkReservation :execrows
-- Links a reservation whose wallet event arrived after its Run (checks done).
UPDATE operations.operation_summaries
   SET reservation_state = 'reserved', reservation_event_id = @reservation_event_id,
       reservation_occurred_at = @reservation_occurred_at,
       reservation_economic_identity = @reservation_economic_identity, reserved_amount = @reserved_amount,
       updated_at = @now
 WHERE projection_name = @projection_name AND projection_version = @projection_version AND run_id = @run_id
   AND reservation_state = 'source_delayed';
