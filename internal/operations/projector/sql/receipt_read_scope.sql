-- name: ReceiptReadScope
-- The audience/scope of a directed receipt read: the event frozen with the
-- given definition quadruple, its core_operations member in that definition
-- and its core_operations delivery row (same core database).
-- $1 event id, $2..$5 definition quadruple.
SELECT e.event_type, e.schema_version, e.event_envelope_digest_algorithm_version, e.event_envelope_sha256,
       m.consumer_name, m.expected_receipt_type, m.expected_receipt_schema_version, m.mandatory,
       m.projection_name, m.projection_version, d.required_projection_name, d.required_projection_version
  FROM outbox.outbox_events e
  JOIN outbox.delivery_set_members m
    ON m.delivery_set_version = e.delivery_set_version AND m.event_type = e.event_type
   AND m.schema_version = e.schema_version AND m.destination = 'core_operations'
  LEFT JOIN outbox.outbox_deliveries d ON d.event_id = e.event_id AND d.destination = 'core_operations'
 WHERE e.event_id = $1 AND e.delivery_set_version = $2 AND e.delivery_set_definition_schema_version = $3
   AND e.delivery_set_definition_digest_algorithm_version = $4 AND e.delivery_set_definition_digest = $5
