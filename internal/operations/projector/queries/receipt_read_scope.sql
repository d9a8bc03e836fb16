-- name: ReceiptReadScope :one
-- The audience/scope of a directed receipt read: the event frozen with the
-- given definition quadruple, its core_operations member in that definition
-- and its core_operations delivery row (same core database), read through
-- the outbox-owned view outbox.event_frozen_members (outbox migration 00090).
SELECT event_type, event_schema_version, event_envelope_digest_algorithm_version, event_envelope_sha256,
       consumer_name, expected_receipt_type, expected_receipt_schema_version, mandatory,
       projection_name, projection_version, delivery_projection_name, delivery_projection_version
  FROM outbox.event_frozen_members
 WHERE event_id = @event_id AND destination = 'core_operations'
   AND delivery_set_version = @delivery_set_version
   AND delivery_set_definition_schema_version = @delivery_set_definition_schema_version
   AND delivery_set_definition_digest_algorithm_version = @delivery_set_definition_digest_algorithm_version
   AND delivery_set_definition_digest = @delivery_set_definition_digest;
