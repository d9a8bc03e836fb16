-- name: CostSelect
SELECT fence_revision, state_version, current_availability_ref, current_availability_digest,
       availability_state, latest_work_generation, trigger_digest
FROM metering.cost_lanes
WHERE execution_attempt_id = @attempt_id AND gateway_deployment_id = @deployment_id
  AND source_evidence_dimension_key = @dimension_key
FOR UPDATE;
