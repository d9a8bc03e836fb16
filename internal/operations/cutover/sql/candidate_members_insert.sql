-- name: CandidateMembersInsert
-- The candidate's exact members, from the same snapshot as CandidateInsert.
INSERT INTO operations.cutover_candidate_members (candidate_id, event_id, event_type, event_schema_version,
    event_envelope_digest_algorithm_version, event_envelope_sha256, delivery_set_version,
    delivery_set_definition_schema_version, delivery_set_definition_digest_algorithm_version,
    delivery_set_definition_digest, consumer_name, expected_receipt_type, expected_receipt_schema_version)
SELECT @candidate_id::uuid, s.event_id, s.event_type, s.event_schema_version, s.event_envelope_digest_algorithm_version,
       s.event_envelope_sha256, s.delivery_set_version, s.delivery_set_definition_schema_version,
       s.delivery_set_definition_digest_algorithm_version, s.delivery_set_definition_digest, s.consumer_name,
       s.expected_receipt_type, s.expected_receipt_schema_version
  FROM outbox.projection_source_events s
 WHERE s.destination = 'core_operations' AND s.projection_name = @projection_name
