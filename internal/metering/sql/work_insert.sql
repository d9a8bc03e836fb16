-- name: WorkInsert
-- Insert-or-compare of one immutable Work generation: a replay of the same
-- generation must carry the same digest (the caller compares).
WITH ins AS (
  INSERT INTO metering.input_works (work_ref, work_schema_version, work_digest_algorithm_version, work_digest,
    execution_attempt_id, lane_kind, gateway_deployment_id, source_evidence_dimension_key, work_generation,
    operation_id, trigger_digest, work_body)
  VALUES (@work_ref, '1', 'jcs-sha256-v1', @work_digest, @attempt_id, @lane_kind, @deployment_id, @dimension_key,
    @generation, @operation_id, @trigger_digest, @work_body)
  ON CONFLICT (execution_attempt_id, lane_kind, gateway_deployment_id, source_evidence_dimension_key, work_generation) DO NOTHING
  RETURNING work_ref, work_digest
)
SELECT work_ref, work_digest FROM ins
UNION ALL
SELECT work_ref, work_digest FROM metering.input_works
WHERE execution_attempt_id = @attempt_id AND lane_kind = @lane_kind AND gateway_deployment_id = @deployment_id
  AND source_evidence_dimension_key = @dimension_key AND work_generation = @generation
LIMIT 1;
