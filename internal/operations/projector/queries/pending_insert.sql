-- name: PendingInsert :exec
-- A Wallet-first reservation waits for its Run (OPS-3).
INSERT INTO operations.pending_unlinked_reservations (projection_name, projection_version, billing_reservation_id,
    run_id, billing_account_id, run_admission_manifest_ref, run_admission_manifest_schema_version,
    run_admission_manifest_digest_algorithm_version, run_admission_manifest_digest,
    tenant_kind, tenant_id, workspace_id, project_id, correlation_id, causation_id, operation_id,
    wallet_event_id, wallet_occurred_at, reservation_economic_identity, reserved_amount, status, received_at)
VALUES (@projection_name, @projection_version, @billing_reservation_id, @run_id, @billing_account_id,
    @run_admission_manifest_ref, @run_admission_manifest_schema_version,
    @run_admission_manifest_digest_algorithm_version, @run_admission_manifest_digest,
    @tenant_kind, @tenant_id, @workspace_id, sqlc.narg(project_id), @correlation_id, sqlc.narg(causation_id),
    sqlc.narg(operation_id), @wallet_event_id, @wallet_occurred_at, @reservation_economic_identity, @reserved_amount,
    'pending', @now);
