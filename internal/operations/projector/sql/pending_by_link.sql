-- name: PendingByLink
-- The reservations waiting for a Run (Wallet-first) that name the run or the
-- reservation, locked.
-- $1 projection name, $2 projection version, $3 run id, $4 reservation id.
SELECT billing_reservation_id, run_id, billing_account_id,
       run_admission_manifest_ref, run_admission_manifest_schema_version,
       run_admission_manifest_digest_algorithm_version, run_admission_manifest_digest,
       tenant_kind, tenant_id, workspace_id, project_id, correlation_id, causation_id, operation_id,
       wallet_event_id, wallet_occurred_at, reservation_economic_identity, reserved_amount,
       finalization_event_id, finalization_occurred_at, billing_finalization_decision, settled_amount, released_amount
  FROM operations.pending_unlinked_reservations
 WHERE projection_name = $1 AND projection_version = $2 AND status = 'pending'
   AND (run_id = $3 OR billing_reservation_id = $4)
   FOR UPDATE
