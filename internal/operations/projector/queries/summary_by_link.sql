-- name: SummaryByLink :many
-- The operation summaries that name the run or the reservation, locked
-- (0, 1 or — in a conflict — 2 rows). Two probes, not an OR: a generic plan
-- of the OR made on a small table scans a whole key and filters.
SELECT s.run_id, s.billing_reservation_id, s.billing_account_id,
       run_admission_manifest_ref, run_admission_manifest_schema_version,
       run_admission_manifest_digest_algorithm_version, run_admission_manifest_digest,
       tenant_kind, tenant_id, workspace_id, project_id, correlation_id, operation_id,
       run_event_id, reservation_state, reservation_economic_identity, reserved_amount
  FROM operations.operation_summaries s
 WHERE s.projection_name = @projection_name AND s.projection_version = @projection_version
   AND s.run_id = ANY(ARRAY[@run_id::uuid, (
         SELECT r.run_id FROM operations.operation_summaries r
          WHERE r.billing_reservation_id = @billing_reservation_id
            AND r.projection_name = @projection_name AND r.projection_version = @projection_version)])
   FOR UPDATE;
