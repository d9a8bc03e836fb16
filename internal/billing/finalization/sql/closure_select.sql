-- name: ClosureSelect
-- What the coordinator applied for a fence: the run's identities (admission
-- row), the reservation's amount and the closure watermark (primary keys).
SELECT f.billing_finalization_fence_id, f.billing_reservation_id, f.run_id, r.billing_account_id, r.correlation_id,
       r.tenant_kind, r.tenant_id, r.workspace_id, r.project_id,
       r.run_admission_manifest_ref, r.run_admission_manifest_schema_version,
       r.run_admission_manifest_digest_algorithm_version, r.run_admission_manifest_digest,
       trim_scale(s.reserved_amount)::text AS reserved_amount,
       c.closure_operation_id,
       c.run_execution_finalization_ref, c.run_execution_finalization_schema_version,
       c.run_execution_finalization_digest_algorithm_version, c.run_execution_finalization_digest,
       c.run_execution_finalization_state_version,
       c.attempt_set_manifest_ref, c.attempt_set_manifest_schema_version,
       c.attempt_set_manifest_digest_algorithm_version, c.attempt_set_manifest_digest, c.attempt_count
  FROM billing.billing_finalization_fences f
  JOIN admission.runs r ON r.run_id = f.run_id
  JOIN billing.reservation_states s ON s.billing_reservation_id = f.billing_reservation_id
  JOIN billing.closure_watermarks c ON c.billing_finalization_fence_id = f.billing_finalization_fence_id
 WHERE f.billing_finalization_fence_id = @fence_id;
