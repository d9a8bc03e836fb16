-- name: CostCoordinationSelect
-- The committed coordination of one cost lane (none: pending).
SELECT work_generation, state, coalesce(availability_state, '') AS availability_state,
       coalesce(state_reason_code, '') AS state_reason_code,
       coalesce(processing_ref, '') AS processing_ref, coalesce(processing_digest, '') AS processing_digest,
       coalesce(finished_ref, '') AS finished_ref, coalesce(finished_digest, '') AS finished_digest,
       coalesce(blocked_ref, '') AS blocked_ref, coalesce(blocked_digest, '') AS blocked_digest
FROM metering.cost_lane_coordination
WHERE execution_attempt_id = @attempt_id AND gateway_deployment_id = @deployment_id
  AND source_evidence_dimension_key = @dimension_key;
