-- name: AppendInsertDeliveries
-- One pending row per mandatory member, its expectations frozen from the
-- member; the definition version is $1.
INSERT INTO outbox.outbox_deliveries (
  event_id, delivery_set_version, destination, consumer_name,
  expected_receipt_type, expected_receipt_schema_version,
  required_projection_name, required_projection_version, mandatory)
SELECT u.event_id, $1, u.destination, u.consumer_name,
       u.expected_receipt_type, u.expected_receipt_schema_version,
       u.required_projection_name, u.required_projection_version, true
  FROM unnest($2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[])
    AS u(event_id, destination, consumer_name, expected_receipt_type, expected_receipt_schema_version,
         required_projection_name, required_projection_version)
