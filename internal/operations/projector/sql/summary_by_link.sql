-- name: SummaryByLink
-- The operation summaries that name the run or the reservation, locked
-- (0, 1 or — in a conflict — 2 rows).
-- $1 projection name, $2 projection version, $3 run id, $4 reservation id.
SELECT run_id, billing_reservation_id, billing_account_id,
       run_admission_manifest_ref, run_admission_manifest_schema_version,
       run_admission_manifest_digest_algorithm_version, run_admission_manifest_digest,
       tenant_kind, tenant_id, workspace_id, project_id, correlation_id, operation_id,
       run_event_id, reservation_state, reservation_economic_identity, reserved_amount
  FROM operations.operation_summaries
 WHERE projection_name = $1 AND projection_version = $2 AND (run_id = $3 OR billing_reservation_id = $4)
   FOR UPDATE
