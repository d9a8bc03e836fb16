-- One pending row per mandatory member, its expectations frozen from the
-- member of the frozen definition (inserted only while that definition is
-- the active one, like the events).
-- uuid arrays are bound as text[] and cast here: pgx has no binary plan for
-- []string into uuid[] and would fail one (and format an error) per call
-- before falling back to text.
INSERT INTO outbox.outbox_deliveries (
  event_id, delivery_set_version, destination, consumer_name,
  expected_receipt_type, expected_receipt_schema_version,
  required_projection_name, required_projection_version, mandatory)
SELECT u.event_id, @delivery_set_version, u.destination, u.consumer_name,
       u.expected_receipt_type, u.expected_receipt_schema_version,
       u.required_projection_name, u.required_projection_version, true
  FROM unnest(@event_ids::text[]::uuid[], @destinations::text[], @consumer_names::text[],
              @expected_receipt_types::text[], @expected_receipt_schema_versions::text[],
              @required_projection_names::text[], @required_projection_versions::bigint[])
    AS u(event_id, destination, consumer_name, expected_receipt_type, expected_receipt_schema_version,
         required_projection_name, required_projection_version)
 WHERE {{frozen_definition_is_active}}
