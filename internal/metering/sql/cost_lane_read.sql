-- name: CostLaneRead
-- The cost lane as the worker reads it before its owner reads (no lock):
-- the availability and manifest of the lane's latest generation.
SELECT state_version, current_availability_ref, current_availability_digest, availability_state,
       latest_work_generation, trigger_digest,
       coalesce(attempt_manifest_ref, '') AS attempt_manifest_ref,
       coalesce(attempt_manifest_schema_version, '') AS attempt_manifest_schema_version,
       coalesce(attempt_manifest_digest_algorithm_version, '') AS attempt_manifest_digest_algorithm_version,
       coalesce(attempt_manifest_digest, '') AS attempt_manifest_digest
FROM metering.cost_lanes
WHERE execution_attempt_id = @attempt_id AND gateway_deployment_id = @deployment_id
  AND source_evidence_dimension_key = @dimension_key;
