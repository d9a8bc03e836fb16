-- name: WorkClaim
-- One unfinished Work whose latest attempt (if any) has no live lease,
-- locked for the claim transaction; concurrent workers skip it.
SELECT w.work_ref, w.work_digest, w.execution_attempt_id::text AS execution_attempt_id, w.lane_kind,
       w.gateway_deployment_id, w.source_evidence_dimension_key, w.work_generation,
       w.operation_id::text AS operation_id, w.trigger_digest
FROM metering.input_works w
WHERE NOT EXISTS (SELECT 1 FROM metering.work_finishes f WHERE f.work_ref = w.work_ref)
  AND NOT EXISTS (SELECT 1 FROM metering.work_attempts a WHERE a.work_ref = w.work_ref AND a.lease_until > now())
ORDER BY w.created_at, w.work_ref
LIMIT 1
FOR UPDATE OF w SKIP LOCKED;
