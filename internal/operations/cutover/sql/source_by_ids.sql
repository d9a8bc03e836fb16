-- name: SourceByIDs
-- The source events of one page of SourceMissing, with the canonical
-- envelope and the frozen core_operations member, in append order.
SELECT s.event_id::text AS event_id, s.event_type, s.event_schema_version, s.event_envelope,
       s.event_envelope_digest_algorithm_version AS alg, s.event_envelope_sha256 AS sha,
       s.destination, s.consumer_name, s.expected_receipt_type, s.expected_receipt_schema_version,
       s.mandatory, s.created_at
  FROM outbox.projection_source_events s
 WHERE s.destination = 'core_operations' AND s.projection_name = @projection_name
   AND s.event_id = ANY (@event_ids::uuid[])
 ORDER BY s.created_at, s.event_id
