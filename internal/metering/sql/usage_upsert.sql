-- name: UsageUpsert
INSERT INTO metering.usage_watermarks (execution_attempt_id, gateway_deployment_id, evidence_dimension_key,
  state_version, current_availability_ref, current_availability_digest, availability_state)
VALUES (@attempt_id, @deployment_id, @dimension_key, @state_version, @ref, @digest, @availability_state)
ON CONFLICT (execution_attempt_id, gateway_deployment_id, evidence_dimension_key) DO UPDATE SET
  state_version = EXCLUDED.state_version, current_availability_ref = EXCLUDED.current_availability_ref,
  current_availability_digest = EXCLUDED.current_availability_digest, availability_state = EXCLUDED.availability_state;
