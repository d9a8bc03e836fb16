-- The members of a definition being registered, in one statement (a
-- multi-array unnest, which sqlc cannot type). NULL projection targets
-- travel as NULL array elements.
INSERT INTO outbox.delivery_set_members (
  delivery_set_version, event_type, schema_version, destination, consumer_name, mandatory,
  expected_receipt_type, expected_receipt_schema_version,
  projection_target_state, projection_name, projection_version)
SELECT @delivery_set_version, u.event_type, u.schema_version, u.destination, u.consumer_name, u.mandatory,
       u.expected_receipt_type, u.expected_receipt_schema_version,
       u.projection_target_state, u.projection_name, u.projection_version
  FROM unnest(@event_types::text[], @schema_versions::text[], @destinations::text[], @consumer_names::text[],
              @mandatory::boolean[], @expected_receipt_types::text[], @expected_receipt_schema_versions::text[],
              @projection_target_states::text[], @projection_names::text[], @projection_versions::bigint[])
    AS u(event_type, schema_version, destination, consumer_name, mandatory,
         expected_receipt_type, expected_receipt_schema_version,
         projection_target_state, projection_name, projection_version)
