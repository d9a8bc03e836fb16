-- name: SummaryLinkReservation
-- Links a reservation whose wallet event arrived after its Run (checks done).
-- $1 projection name, $2 projection version, $3 run id, $4 wallet event id,
-- $5 wallet occurred at, $6 economic identity, $7 reserved amount, $8 now.
UPDATE operations.operation_summaries
   SET reservation_state = 'reserved', reservation_event_id = $4, reservation_occurred_at = $5,
       reservation_economic_identity = $6, reserved_amount = $7, updated_at = $8
 WHERE projection_name = $1 AND projection_version = $2 AND run_id = $3 AND reservation_state = 'source_delayed'
