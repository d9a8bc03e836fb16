-- name: WorkLatest
SELECT work_ref, work_digest, operation_id::text AS operation_id, work_generation
FROM metering.input_works
WHERE execution_attempt_id = @attempt_id AND lane_kind = @lane_kind AND gateway_deployment_id = @deployment_id
  AND source_evidence_dimension_key = @dimension_key AND work_generation = @generation;
