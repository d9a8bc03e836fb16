-- name: WorkClaim
-- Lease one queued (unfinished) Work whose lease expired (index
-- pending_works_claim: the claimable rows are one range of it). The row lock is
-- taken with SKIP LOCKED; a row another claimer committed meanwhile is
-- re-checked on its new lease and skipped.
WITH claimed AS (
  UPDATE metering.pending_works p SET lease_until = now() + make_interval(secs => @lease_seconds)
  WHERE p.work_ref = (
    SELECT q.work_ref FROM metering.pending_works q
    WHERE q.lease_until <= now()
    ORDER BY q.lease_until, q.queued_at, q.work_ref
    LIMIT 1
    FOR UPDATE SKIP LOCKED)
    AND p.lease_until <= now()
  RETURNING p.work_ref
)
SELECT w.work_ref, w.work_digest, w.execution_attempt_id::text AS execution_attempt_id, w.lane_kind,
       w.gateway_deployment_id, w.source_evidence_dimension_key, w.work_generation,
       w.operation_id::text AS operation_id, w.trigger_digest
FROM claimed c JOIN metering.input_works w ON w.work_ref = c.work_ref;
