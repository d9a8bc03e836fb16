-- name: PendingCaseSuccessorsByFence :many
-- The verified successor requests of one fence still waiting for their
-- predecessor's close (read under the fence's case lock).
SELECT * FROM operations.pending_finalization_case_successors
 WHERE billing_finalization_fence_id = @billing_finalization_fence_id
   AND projection_name = @projection_name AND projection_version = @projection_version AND status = 'pending'
 ORDER BY reconciliation_generation;

-- name: PendingCaseSuccessorInsert :exec
-- A verified successor request whose direct predecessor is not closed yet
-- (PendingFinalizationCaseSuccessor), frozen with everything its case needs.
INSERT INTO operations.pending_finalization_case_successors (reconciliation_case_ref, projection_name, projection_version,
    billing_finalization_fence_id, reconciliation_generation, case_identity_ref, case_identity_schema_version,
    case_identity_digest_algorithm_version, case_identity_digest, case_request_operation_id,
    predecessor_reconciliation_case_ref, predecessor_generation, predecessor_case_identity_ref,
    predecessor_case_identity_schema_version, predecessor_case_identity_digest_algorithm_version,
    predecessor_case_identity_digest, billing_reservation_id, billing_account_id, run_id,
    tenant_kind, tenant_id, workspace_id, project_id,
    decision_ref, decision_schema_version, decision_digest_algorithm_version, decision_digest,
    triggering_work_ref, triggering_work_schema_version, triggering_work_digest_algorithm_version, triggering_work_digest,
    triggering_work_generation, billing_finalization_operation_id, reconciliation_reason_code,
    request_event_id, request_event_envelope_digest_algorithm_version, request_event_envelope_sha256, requested_at,
    received_at, status)
VALUES (@reconciliation_case_ref, @projection_name, @projection_version,
    @billing_finalization_fence_id, @reconciliation_generation, @case_identity_ref, @case_identity_schema_version,
    @case_identity_digest_algorithm_version, @case_identity_digest, @case_request_operation_id,
    @predecessor_reconciliation_case_ref, @predecessor_generation, @predecessor_case_identity_ref,
    @predecessor_case_identity_schema_version, @predecessor_case_identity_digest_algorithm_version,
    @predecessor_case_identity_digest, @billing_reservation_id, @billing_account_id, @run_id,
    @tenant_kind, @tenant_id, @workspace_id, sqlc.narg(project_id),
    @decision_ref, @decision_schema_version, @decision_digest_algorithm_version, @decision_digest,
    @triggering_work_ref, @triggering_work_schema_version, @triggering_work_digest_algorithm_version, @triggering_work_digest,
    @triggering_work_generation, @billing_finalization_operation_id, @reconciliation_reason_code,
    @request_event_id, @request_event_envelope_digest_algorithm_version, @request_event_envelope_sha256, @requested_at,
    @now, 'pending');

-- name: PendingCaseSuccessorMaterialize :execrows
-- The predecessor closed: the waiting successor's case was materialised;
-- the row stays as audit.
UPDATE operations.pending_finalization_case_successors
   SET status = 'materialized', materialized_at = @now::timestamptz, materialized_by_event_id = @materialized_by_event_id::uuid
 WHERE reconciliation_case_ref = @reconciliation_case_ref
   AND projection_name = @projection_name AND projection_version = @projection_version AND status = 'pending';
