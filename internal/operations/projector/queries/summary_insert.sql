-- name: SummaryInsert :exec
-- Creates the operation summary of a Run (run.created@2.0), with the
-- reservation already linked when a Wallet-first reservation passed the
-- causal and equality checks, else reservation_state=source_delayed.
INSERT INTO operations.operation_summaries (projection_name, projection_version, run_id, operation_id,
    correlation_id, tenant_kind, tenant_id, workspace_id, project_id, billing_account_id, billing_reservation_id,
    run_admission_manifest_ref, run_admission_manifest_schema_version,
    run_admission_manifest_digest_algorithm_version, run_admission_manifest_digest,
    run_event_id, run_occurred_at, reservation_state, reservation_event_id, reservation_occurred_at,
    reservation_economic_identity, reserved_amount, finalization_event_id, finalization_occurred_at,
    billing_finalization_decision, settled_amount, released_amount, created_at, updated_at)
VALUES (@projection_name, @projection_version, @run_id, sqlc.narg(operation_id), @correlation_id,
    @tenant_kind, @tenant_id, @workspace_id, sqlc.narg(project_id), @billing_account_id, @billing_reservation_id,
    @run_admission_manifest_ref, @run_admission_manifest_schema_version,
    @run_admission_manifest_digest_algorithm_version, @run_admission_manifest_digest,
    @run_event_id, @run_occurred_at, @reservation_state, sqlc.narg(reservation_event_id), sqlc.narg(reservation_occurred_at),
    sqlc.narg(reservation_economic_identity), sqlc.narg(reserved_amount), sqlc.narg(finalization_event_id),
    sqlc.narg(finalization_occurred_at), sqlc.narg(billing_finalization_decision), sqlc.narg(settled_amount),
    sqlc.narg(released_amount), @now, @now);
