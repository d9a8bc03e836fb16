-- name: PendingByLink :many
-- The reservations waiting for a Run (Wallet-first) that name the run or the
-- reservation, locked.
SELECT billing_reservation_id, run_id, billing_account_id,
       run_admission_manifest_ref, run_admission_manifest_schema_version,
       run_admission_manifest_digest_algorithm_version, run_admission_manifest_digest,
       tenant_kind, tenant_id, workspace_id, project_id, correlation_id, causation_id, operation_id,
       wallet_event_id, wallet_occurred_at, reservation_economic_identity, reserved_amount,
       finalization_event_id, finalization_occurred_at, billing_finalization_decision, settled_amount, released_amount
  FROM operations.pending_unlinked_reservations
 WHERE projection_name = @projection_name AND projection_version = @projection_version AND status = 'pending'
   AND (run_id = @run_id OR billing_reservation_id = @billing_reservation_id)
   FOR UPDATE;
