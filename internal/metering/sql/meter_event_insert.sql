-- name: MeterEventInsert
-- Insert-or-find a MeterEvent by its content digest (the same evidence
-- measured again is the same event).
WITH ins AS (
  INSERT INTO metering.meter_events (meter_event_ref, meter_event_digest, settlement_dimension_id, execution_attempt_id,
    charge_dimension_key, quantity, unit, work_ref, attempt_number, fencing_token, meter_event_body)
  VALUES (@meter_event_ref, @meter_event_digest, @settlement_dimension_id, @attempt_id, @charge_dimension_key,
    @quantity::numeric, @unit, @work_ref, @attempt_number, @fencing_token, @meter_event_body)
  ON CONFLICT (meter_event_digest) DO NOTHING
  RETURNING meter_event_ref
)
SELECT meter_event_ref FROM ins
UNION ALL
SELECT meter_event_ref FROM metering.meter_events WHERE meter_event_digest = @meter_event_digest
LIMIT 1;
