-- name: SummaryByLink :many
-- The operation summaries that name the run or the reservation, locked
-- (0, 1 or — in a conflict — 2 rows).
SELECT run_id, billing_reservation_id, billing_account_id,
       run_admission_manifest_ref, run_admission_manifest_schema_version,
       run_admission_manifest_digest_algorithm_version, run_admission_manifest_digest,
       tenant_kind, tenant_id, workspace_id, project_id, correlation_id, operation_id,
       run_event_id, reservation_state, reservation_economic_identity, reserved_amount
  FROM operations.operation_summaries
 WHERE projection_name = @projection_name AND projection_version = @projection_version
   AND (run_id = @run_id OR billing_reservation_id = @billing_reservation_id)
   FOR UPDATE;
