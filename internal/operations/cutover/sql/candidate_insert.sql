-- name: CandidateInsert
-- Cutover step 2 (with CandidateMembersInsert and BuildFreeze, one short
-- REPEATABLE READ transaction): freeze the candidate — every source event
-- that requires this projection, with its frozen definition and expected
-- receipt coordinates — and the shadow token bound to it.
INSERT INTO operations.cutover_candidates (candidate_id, projection_name, projection_version,
    active_projection_version, shadow_token, database_snapshot, frozen_at, member_count, members_sha256)
SELECT @candidate_id::uuid, @projection_name, @projection_version, @active_projection_version, @token::uuid,
       pg_current_snapshot()::text, now(), count(*),
       encode(sha256(convert_to(COALESCE(string_agg(concat_ws('|', s.event_id, s.event_type, s.event_schema_version,
         s.event_envelope_digest_algorithm_version, s.event_envelope_sha256, s.delivery_set_version,
         s.delivery_set_definition_digest, s.consumer_name, s.expected_receipt_type, s.expected_receipt_schema_version),
         E'\n' ORDER BY s.event_id), ''), 'UTF8')), 'hex')
  FROM outbox.projection_source_events s
 WHERE s.destination = 'core_operations' AND s.projection_name = @projection_name
RETURNING member_count
