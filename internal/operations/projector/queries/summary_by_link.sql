-- name: SummaryByLink :many
-- The operation summaries that name the run or the reservation, locked
-- (0, 1 or — in a conflict — 2 rows). Each is a lateral probe of the primary
-- key by run id (the reservation's run found by a probe of its key): an OR,
-- or an = ANY over both ids, let a plan made on a small table scan the whole
-- projection, and on a server without autovacuum such a plan is never
-- replaced.
SELECT s.run_id, s.billing_reservation_id, s.billing_account_id,
       s.run_admission_manifest_ref, s.run_admission_manifest_schema_version,
       s.run_admission_manifest_digest_algorithm_version, s.run_admission_manifest_digest,
       s.tenant_kind, s.tenant_id, s.workspace_id, s.project_id, s.correlation_id, s.operation_id,
       s.run_event_id, s.reservation_state, s.reservation_economic_identity, s.reserved_amount
  FROM (SELECT @run_id::uuid AS run_id
        UNION
        SELECT r.run_id FROM operations.operation_summaries r
         WHERE r.billing_reservation_id = @billing_reservation_id
           AND r.projection_name = @projection_name AND r.projection_version = @projection_version) ids
 CROSS JOIN LATERAL (
   SELECT o.run_id, o.billing_reservation_id, o.billing_account_id,
          o.run_admission_manifest_ref, o.run_admission_manifest_schema_version,
          o.run_admission_manifest_digest_algorithm_version, o.run_admission_manifest_digest,
          o.tenant_kind, o.tenant_id, o.workspace_id, o.project_id, o.correlation_id, o.operation_id,
          o.run_event_id, o.reservation_state, o.reservation_economic_identity, o.reserved_amount
     FROM operations.operation_summaries o
    WHERE o.run_id = ids.run_id AND o.projection_name = @projection_name AND o.projection_version = @projection_version
    LIMIT 1
    FOR UPDATE) s;
