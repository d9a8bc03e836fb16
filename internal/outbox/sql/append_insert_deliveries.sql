-- name: AppendInsertDeliveries
-- One pending row per mandatory member, its expectations frozen from the
-- member of definition $1..$4 (inserted only while that definition is the
-- active one, like the events).
INSERT INTO outbox.outbox_deliveries (
  event_id, delivery_set_version, destination, consumer_name,
  expected_receipt_type, expected_receipt_schema_version,
  required_projection_name, required_projection_version, mandatory)
SELECT u.event_id, $1, u.destination, u.consumer_name,
       u.expected_receipt_type, u.expected_receipt_schema_version,
       u.required_projection_name, u.required_projection_version, true
  FROM unnest($5::uuid[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::bigint[])
    AS u(event_id, destination, consumer_name, expected_receipt_type, expected_receipt_schema_version,
         required_projection_name, required_projection_version)
 WHERE EXISTS (SELECT 1 FROM outbox.lock_active_definition() a
                WHERE a.delivery_set_version = $1 AND a.delivery_set_definition_schema_version = $2
                  AND a.delivery_set_definition_digest_algorithm_version = $3 AND a.delivery_set_definition_digest = $4)
