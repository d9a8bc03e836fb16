-- name: WorkClaim
-- One queued (unfinished) Work whose latest attempt (if any) has no live
-- lease, locked for the claim transaction; concurrent workers skip it.
SELECT w.work_ref, w.work_digest, w.execution_attempt_id::text AS execution_attempt_id, w.lane_kind,
       w.gateway_deployment_id, w.source_evidence_dimension_key, w.work_generation,
       w.operation_id::text AS operation_id, w.trigger_digest
FROM metering.pending_works p
JOIN metering.input_works w ON w.work_ref = p.work_ref
WHERE NOT EXISTS (SELECT 1 FROM metering.work_attempts a WHERE a.work_ref = p.work_ref AND a.lease_until > now())
ORDER BY p.queued_at, p.work_ref
LIMIT 1
FOR UPDATE OF p SKIP LOCKED;
