-- name: RegistryInsertMembers
INSERT INTO outbox.delivery_set_members (
  delivery_set_version, event_type, schema_version, destination, consumer_name, mandatory,
  expected_receipt_type, expected_receipt_schema_version,
  projection_target_state, projection_name, projection_version)
SELECT $1, u.event_type, u.schema_version, u.destination, u.consumer_name, u.mandatory,
       u.expected_receipt_type, u.expected_receipt_schema_version,
       u.projection_target_state, u.projection_name, u.projection_version
  FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::boolean[], $7::text[], $8::text[],
              $9::text[], $10::text[], $11::bigint[])
    AS u(event_type, schema_version, destination, consumer_name, mandatory,
         expected_receipt_type, expected_receipt_schema_version,
         projection_target_state, projection_name, projection_version)
