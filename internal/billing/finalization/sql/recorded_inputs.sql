-- name: RecordedInputs
-- The settlement inputs the coordinator recorded for a reservation (its
-- settlement-input watermarks; primary key prefix).
SELECT settlement_dimension_id, settlement_input_snapshot_ref, settlement_input_snapshot_schema_version,
       settlement_input_snapshot_digest_algorithm_version, settlement_input_snapshot_digest, settlement_input_state_version
  FROM billing.settlement_input_watermarks
 WHERE billing_reservation_id = @reservation_id;
