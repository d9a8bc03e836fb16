-- name: WorkStartedOlder
-- Older generations of the lane that are Started (an attempt exists) and
-- unfinished, with their latest attempt: a new generation supersedes them.
-- Unfinished = still queued (a Work leaves pending_works in the transaction
-- that writes its finish), so the read never walks finished generations.
SELECT w.work_ref, w.work_digest, w.execution_attempt_id::text AS execution_attempt_id, w.lane_kind,
       w.gateway_deployment_id, w.source_evidence_dimension_key, w.work_generation,
       w.operation_id::text AS operation_id, w.trigger_digest,
       a.attempt_number, a.fencing_token::text AS fencing_token
FROM metering.input_works w
JOIN metering.pending_works p ON p.work_ref = w.work_ref
JOIN LATERAL (SELECT attempt_number, fencing_token FROM metering.work_attempts x
              WHERE x.work_ref = w.work_ref ORDER BY attempt_number DESC LIMIT 1) a ON true
WHERE w.execution_attempt_id = @attempt_id AND w.lane_kind = @lane_kind
  AND w.gateway_deployment_id = @deployment_id AND w.source_evidence_dimension_key = @dimension_key
  AND w.work_generation < @generation
ORDER BY w.work_generation;
