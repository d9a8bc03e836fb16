-- name: SettlementConflictInsert
-- SettlementInputConflictFact@1, insert-or-compare on (dimension, state
-- version, owner block): the stored body is returned either way.
WITH ins AS (
  INSERT INTO metering.settlement_input_conflict_facts (settlement_input_conflict_fact_ref,
    settlement_input_conflict_fact_schema_version, settlement_input_conflict_fact_digest_algorithm_version,
    settlement_input_conflict_fact_digest, settlement_dimension_id, validated_state_version, blocked_ref, fact_body, detected_at)
  VALUES (@fact_ref, '1', 'jcs-sha256-v1', @fact_digest, @settlement_dimension_id, @validated_state_version, @blocked_ref,
    @fact_body, @detected_at)
  ON CONFLICT (settlement_dimension_id, validated_state_version, blocked_ref) DO NOTHING
  RETURNING fact_body
)
SELECT fact_body FROM ins
UNION ALL
SELECT fact_body FROM metering.settlement_input_conflict_facts
 WHERE settlement_dimension_id = @settlement_dimension_id AND validated_state_version = @validated_state_version
   AND blocked_ref = @blocked_ref
LIMIT 1;
