-- name: ReceiptInvariantCounts :one
-- What the outbox invariants cannot know: the Operations projector's
-- receipts agree with the frozen acks (each count must be zero).
SELECT
  -- one_receipt_per_event: a second projector receipt would be a duplicated effect
  (SELECT count(*) FROM (
    SELECT event_id FROM operations.applied_receipts GROUP BY event_id HAVING count(*) > 1) x)::bigint AS events_with_several_receipts,
  -- receipt_for_every_ack: the frozen ack names the projector's receipt for the frozen projection
  (SELECT count(*) FROM outbox.outbox_deliveries d
    WHERE d.destination = 'core_operations' AND d.status = 'acknowledged'
      AND NOT EXISTS (SELECT 1 FROM operations.applied_receipts r
        WHERE r.event_id = d.event_id AND r.receipt_ref = d.ack_receipt_key
          AND r.receipt_schema_version = d.ack_receipt_schema_version
          AND r.receipt_digest_algorithm_version = d.ack_receipt_digest_algorithm_version
          AND r.receipt_digest = d.ack_receipt_digest
          AND r.projection_name = d.required_projection_name AND r.projection_version = d.required_projection_version
          AND r.event_envelope_sha256 = d.ack_event_envelope_sha256))::bigint AS acks_without_matching_receipt;
