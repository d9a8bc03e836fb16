-- name: SummaryInsert
-- Creates the operation summary of a Run (run.created@2.0), with the
-- reservation already linked when a Wallet-first reservation passed the
-- causal and equality checks, else reservation_state=source_delayed.
-- $1 projection name, $2 projection version, $3 run id, $4 operation id,
-- $5 correlation id, $6 tenant kind, $7 tenant id, $8 workspace id, $9 project id,
-- $10 account id, $11 reservation id, $12..$15 manifest quadruple,
-- $16 run event id, $17 run occurred at, $18 reservation state,
-- $19 reservation event id, $20 reservation occurred at, $21 economic identity,
-- $22 reserved amount, $23 finalization event id, $24 finalization occurred at,
-- $25 decision, $26 settled, $27 released, $28 now.
INSERT INTO operations.operation_summaries (projection_name, projection_version, run_id, operation_id,
    correlation_id, tenant_kind, tenant_id, workspace_id, project_id, billing_account_id, billing_reservation_id,
    run_admission_manifest_ref, run_admission_manifest_schema_version,
    run_admission_manifest_digest_algorithm_version, run_admission_manifest_digest,
    run_event_id, run_occurred_at, reservation_state, reservation_event_id, reservation_occurred_at,
    reservation_economic_identity, reserved_amount, finalization_event_id, finalization_occurred_at,
    billing_finalization_decision, settled_amount, released_amount, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
    $21, $22, $23, $24, $25, $26, $27, $28, $28)
