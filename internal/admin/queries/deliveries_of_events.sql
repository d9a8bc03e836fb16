-- name: DeliveriesOfEvents :many
-- The deliveries of the given events with their quarantine row, if any.
SELECT d.event_id, d.destination, d.consumer_name, d.mandatory, d.status, d.attempt_count,
       d.available_at, d.created_at, d.lease_owner, d.lease_expires_at, d.current_attempt_id,
       d.last_attempt_at, d.delivered_at, d.last_error_code, d.last_error_ref,
       d.expected_receipt_type, d.expected_receipt_schema_version,
       d.required_projection_name, d.required_projection_version,
       d.ack_receipt_type, d.ack_receipt_key, d.ack_receipt_schema_version,
       d.ack_receipt_digest_algorithm_version, d.ack_receipt_digest,
       q.reason AS quarantine_reason, q.quarantined_at, q.case_id AS quarantine_case_id,
       q.attempt_id AS quarantine_attempt_id, q.acknowledged_at AS quarantine_acknowledged_at
  FROM outbox.outbox_deliveries d
  LEFT JOIN outbox.outbox_quarantine q ON q.event_id = d.event_id AND q.destination = d.destination
 WHERE d.event_id = ANY(@event_ids::uuid[])
 ORDER BY d.event_id, d.destination;
