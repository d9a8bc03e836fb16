-- name: CostUpsert
INSERT INTO metering.cost_lanes (execution_attempt_id, gateway_deployment_id, source_evidence_dimension_key,
  fence_revision, state_version, current_availability_ref, current_availability_digest, availability_state,
  latest_work_generation, trigger_digest, attempt_manifest_ref, attempt_manifest_schema_version,
  attempt_manifest_digest_algorithm_version, attempt_manifest_digest)
VALUES (@attempt_id, @deployment_id, @dimension_key, @fence_revision, @state_version, @ref, @digest,
  @availability_state, @latest_generation, @trigger_digest, @manifest_ref, @manifest_schema_version,
  @manifest_digest_algorithm_version, @manifest_digest)
ON CONFLICT (execution_attempt_id, gateway_deployment_id, source_evidence_dimension_key) DO UPDATE SET
  fence_revision = EXCLUDED.fence_revision, state_version = EXCLUDED.state_version,
  current_availability_ref = EXCLUDED.current_availability_ref,
  current_availability_digest = EXCLUDED.current_availability_digest,
  availability_state = EXCLUDED.availability_state, latest_work_generation = EXCLUDED.latest_work_generation,
  trigger_digest = EXCLUDED.trigger_digest,
  attempt_manifest_ref = EXCLUDED.attempt_manifest_ref,
  attempt_manifest_schema_version = EXCLUDED.attempt_manifest_schema_version,
  attempt_manifest_digest_algorithm_version = EXCLUDED.attempt_manifest_digest_algorithm_version,
  attempt_manifest_digest = EXCLUDED.attempt_manifest_digest;
