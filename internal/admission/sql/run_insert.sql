-- name: RunInsert
-- $1 run id, $2 admission operation id, $3 tenant kind, $4 tenant id,
-- $5 workspace id, $6 project id, $7 correlation id, $8 account id,
-- $9 reservation id, $10..$13 manifest quadruple, $14 run.created event id, $15 admitted at.
INSERT INTO admission.runs (run_id, admission_operation_id, tenant_kind, tenant_id, workspace_id, project_id,
    correlation_id, billing_account_id, billing_reservation_id, run_admission_manifest_ref,
    run_admission_manifest_schema_version, run_admission_manifest_digest_algorithm_version,
    run_admission_manifest_digest, run_created_event_id, admitted_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
