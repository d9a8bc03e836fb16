-- name: DestinationBind :one
-- Insert-or-compare through the controlled function (DS-4): true when
-- inserted, false when identical; OW017 when bound differently.
SELECT outbox.bind_destination(
  sqlc.arg(destination)::text, sqlc.arg(consumer_name)::text, sqlc.arg(expected_receipt_type)::text,
  sqlc.arg(expected_receipt_schema_version)::text, sqlc.arg(projection_target_state)::text)::boolean AS inserted;

-- name: DestinationBindings :many
SELECT destination, consumer_name, expected_receipt_type, expected_receipt_schema_version, projection_target_state
  FROM outbox.destination_bindings
 ORDER BY destination;
