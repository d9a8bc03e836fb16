-- name: PendingInsert
-- A Wallet-first reservation waits for its Run (OPS-3).
-- $1 projection name, $2 projection version, $3 reservation id, $4 run id,
-- $5 account id, $6..$9 manifest quadruple, $10 tenant kind, $11 tenant id,
-- $12 workspace id, $13 project id, $14 correlation id, $15 causation id,
-- $16 operation id, $17 wallet event id, $18 wallet occurred at,
-- $19 economic identity, $20 reserved amount, $21 now.
INSERT INTO operations.pending_unlinked_reservations (projection_name, projection_version, billing_reservation_id,
    run_id, billing_account_id, run_admission_manifest_ref, run_admission_manifest_schema_version,
    run_admission_manifest_digest_algorithm_version, run_admission_manifest_digest,
    tenant_kind, tenant_id, workspace_id, project_id, correlation_id, causation_id, operation_id,
    wallet_event_id, wallet_occurred_at, reservation_economic_identity, reserved_amount, status, received_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, 'pending', $21)
