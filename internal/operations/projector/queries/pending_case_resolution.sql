-- name: PendingCaseResolutionsByFence :many
-- The verified resolutions of one fence still waiting for their case
-- request (read under the fence's case lock).
SELECT * FROM operations.pending_finalization_case_resolutions
 WHERE billing_finalization_fence_id = @billing_finalization_fence_id
   AND projection_name = @projection_name AND projection_version = @projection_version AND status = 'pending'
 ORDER BY reconciliation_generation;

-- name: PendingCaseResolutionInsert :exec
-- A verified resolution whose case request has not been materialised.
INSERT INTO operations.pending_finalization_case_resolutions (reconciliation_case_ref, projection_name, projection_version,
    billing_finalization_fence_id, reconciliation_generation, case_identity_ref, case_identity_schema_version,
    case_identity_digest_algorithm_version, case_identity_digest, billing_reservation_id, billing_account_id, run_id,
    resolution_event_id, resolution_event_envelope_digest_algorithm_version, resolution_event_envelope_sha256,
    resolution_operation_id, resolution_applied_ref, resolution_applied_schema_version,
    resolution_applied_digest_algorithm_version, resolution_applied_digest, resolution_actor_workforce_principal_id,
    resolved_at, received_at, status)
VALUES (@reconciliation_case_ref, @projection_name, @projection_version,
    @billing_finalization_fence_id, @reconciliation_generation, @case_identity_ref, @case_identity_schema_version,
    @case_identity_digest_algorithm_version, @case_identity_digest, @billing_reservation_id, @billing_account_id, @run_id,
    @resolution_event_id, @resolution_event_envelope_digest_algorithm_version, @resolution_event_envelope_sha256,
    @resolution_operation_id, @resolution_applied_ref, @resolution_applied_schema_version,
    @resolution_applied_digest_algorithm_version, @resolution_applied_digest, @resolution_actor_workforce_principal_id,
    @resolved_at, @now, 'pending');

-- name: PendingCaseResolutionConsume :execrows
-- The case request arrived: the waiting resolution closed the case it
-- materialised; the row stays as audit.
UPDATE operations.pending_finalization_case_resolutions
   SET status = 'consumed', consumed_at = @now::timestamptz, consumed_by_event_id = @consumed_by_event_id::uuid
 WHERE reconciliation_case_ref = @reconciliation_case_ref
   AND projection_name = @projection_name AND projection_version = @projection_version AND status = 'pending';
