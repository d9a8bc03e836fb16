-- name: UsageSelect
-- The eligibility lane's usage watermarks of one attempt (read under the fence lock).
SELECT gateway_deployment_id, evidence_dimension_key, state_version, current_availability_ref,
       current_availability_digest, availability_state
FROM metering.usage_watermarks WHERE execution_attempt_id = @attempt_id
ORDER BY gateway_deployment_id, evidence_dimension_key;
