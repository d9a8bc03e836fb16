-- name: CostCoordinationCAS
-- The cost lane's coordination CAS: a newer generation replaces the row; the
-- same generation only leaves blocked_on_processing_conflict. Zero rows: the
-- caller compares with the stored row (a replay of the same result is fine).
INSERT INTO metering.cost_lane_coordination (execution_attempt_id, gateway_deployment_id, source_evidence_dimension_key,
  work_generation, work_ref, state, availability_state, state_reason_code, processing_ref, processing_digest,
  finished_ref, finished_digest, blocked_ref, blocked_digest)
VALUES (@attempt_id, @deployment_id, @dimension_key, @generation, @work_ref, @state, @availability_state,
  @state_reason_code, @processing_ref, @processing_digest, @finished_ref, @finished_digest, @blocked_ref, @blocked_digest)
ON CONFLICT (execution_attempt_id, gateway_deployment_id, source_evidence_dimension_key) DO UPDATE SET
  work_generation = EXCLUDED.work_generation, work_ref = EXCLUDED.work_ref, state = EXCLUDED.state,
  availability_state = EXCLUDED.availability_state, state_reason_code = EXCLUDED.state_reason_code,
  processing_ref = EXCLUDED.processing_ref, processing_digest = EXCLUDED.processing_digest,
  finished_ref = EXCLUDED.finished_ref, finished_digest = EXCLUDED.finished_digest,
  blocked_ref = EXCLUDED.blocked_ref, blocked_digest = EXCLUDED.blocked_digest, updated_at = now()
WHERE metering.cost_lane_coordination.work_generation < EXCLUDED.work_generation
   OR (metering.cost_lane_coordination.work_generation = EXCLUDED.work_generation
       AND metering.cost_lane_coordination.state = 'blocked_on_processing_conflict');
