-- name: RunStateInsert :execrows
-- Opens a run's execution state; 0 rows when the run is already open.
INSERT INTO execution.run_execution_states (run_id, tenant_kind, tenant_id, workspace_id, project_id,
    billing_account_id, billing_reservation_id, run_admission_manifest_ref, run_admission_manifest_schema_version,
    run_admission_manifest_digest_algorithm_version, run_admission_manifest_digest, run_execution_token_ref,
    run_execution_token_schema_version, run_execution_token_digest_algorithm_version, run_execution_token_digest,
    run_execution_token_body, state, state_version, opened_at)
VALUES (@run_id, @tenant_kind, @tenant_id, @workspace_id, sqlc.narg(project_id), @billing_account_id,
    @billing_reservation_id, @run_admission_manifest_ref, @run_admission_manifest_schema_version,
    @run_admission_manifest_digest_algorithm_version, @run_admission_manifest_digest, @run_execution_token_ref,
    @run_execution_token_schema_version, @run_execution_token_digest_algorithm_version, @run_execution_token_digest,
    @run_execution_token_body, 'accepting_attempts', 1, now())
ON CONFLICT DO NOTHING;

-- name: RunStateByID :one
SELECT * FROM execution.run_execution_states WHERE run_id = @run_id;

-- name: RunStateForShare :one
-- The run row under a share lock: attempt creation and eligibility hold it
-- so the closure's FOR UPDATE waits for them (or they see attempts_closed).
SELECT * FROM execution.run_execution_states WHERE run_id = @run_id FOR SHARE;

-- name: AttemptInsert :execrows
-- 0 rows when the attempt id exists already (the caller compares).
INSERT INTO execution.attempts (execution_attempt_id, run_id, run_step_id, attempt_execution_manifest_ref,
    attempt_execution_manifest_schema_version, attempt_execution_manifest_digest_algorithm_version,
    attempt_execution_manifest_digest, manifest_body, model_deployment_id, gateway_deployment_id,
    routing_policy_revision, created_at)
VALUES (@execution_attempt_id, @run_id, @run_step_id, @attempt_execution_manifest_ref,
    @attempt_execution_manifest_schema_version, @attempt_execution_manifest_digest_algorithm_version,
    @attempt_execution_manifest_digest, @manifest_body, @model_deployment_id, @gateway_deployment_id,
    @routing_policy_revision, @created_at)
ON CONFLICT DO NOTHING;

-- name: AttemptByID :one
SELECT * FROM execution.attempts WHERE execution_attempt_id = @execution_attempt_id;
