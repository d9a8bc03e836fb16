-- name: CandidateCheck
-- Cutover step 5, in the final transaction: re-check the frozen candidate
-- against the shadow version — its members (count and digest recomputed),
-- the receipts of the version for them (same envelope digest), unresolved
-- gaps and unsupported records of the version, quarantined core_operations
-- deliveries of candidate events — and the coordinates the proof names.
WITH m AS (
  SELECT * FROM operations.cutover_candidate_members WHERE candidate_id = @candidate_id::uuid
), r AS (
  SELECT m.event_id, r.receipt_digest
    FROM m JOIN operations.applied_receipts r
      ON r.consumer_name = m.consumer_name AND r.projection_name = @projection_name
     AND r.projection_version = @projection_version AND r.event_id = m.event_id
     AND r.event_envelope_digest_algorithm_version = m.event_envelope_digest_algorithm_version
     AND r.event_envelope_sha256 = m.event_envelope_sha256
)
SELECT c.member_count, c.members_sha256, c.database_snapshot, c.frozen_at, c.active_projection_version,
  (SELECT count(*) FROM m) AS members_now,
  (SELECT encode(sha256(convert_to(COALESCE(string_agg(concat_ws('|', event_id, event_type, event_schema_version,
      event_envelope_digest_algorithm_version, event_envelope_sha256, delivery_set_version,
      delivery_set_definition_digest, consumer_name, expected_receipt_type, expected_receipt_schema_version),
      E'\n' ORDER BY event_id), ''), 'UTF8')), 'hex') FROM m) AS members_sha256_now,
  (SELECT count(*) FROM r) AS receipts,
  (SELECT encode(sha256(convert_to(COALESCE(string_agg(concat_ws('|', event_id, receipt_digest), E'\n' ORDER BY event_id), ''), 'UTF8')), 'hex') FROM r) AS receipts_sha256,
  (SELECT count(*) FROM operations.revision_gaps g
    WHERE g.projection_name = @projection_name AND g.projection_version = @projection_version AND g.resolved_at IS NULL) AS unresolved_gaps,
  (SELECT count(*) FROM operations.unsupported_events u
    WHERE u.projection_name = @projection_name AND u.projection_version = @projection_version AND u.resolved_at IS NULL) AS unsupported,
  (SELECT count(*) FROM outbox.delivery_facts f JOIN m ON m.event_id = f.event_id
    WHERE f.destination = 'core_operations' AND f.status = 'quarantined') AS quarantined,
  (SELECT COALESCE(jsonb_agg(DISTINCT jsonb_build_object(
      'deliverySetVersion', delivery_set_version,
      'deliverySetDefinitionSchemaVersion', delivery_set_definition_schema_version,
      'deliverySetDefinitionDigestAlgorithmVersion', delivery_set_definition_digest_algorithm_version,
      'deliverySetDefinitionDigest', delivery_set_definition_digest)), '[]'::jsonb) FROM m) AS definitions,
  (SELECT COALESCE(jsonb_agg(DISTINCT jsonb_build_object(
      'consumerName', consumer_name, 'expectedReceiptType', expected_receipt_type,
      'expectedReceiptSchemaVersion', expected_receipt_schema_version)), '[]'::jsonb) FROM m) AS receipt_coordinates
  FROM operations.cutover_candidates c
 WHERE c.candidate_id = @candidate_id::uuid
