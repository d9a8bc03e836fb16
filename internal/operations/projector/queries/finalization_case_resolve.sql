-- name: FinalizationCaseResolve :execrows
-- Closes an open case with its verified resolution (open → resolved).
UPDATE operations.finalization_cases
   SET state = 'resolved', resolution_event_id = @resolution_event_id::uuid,
       resolution_event_envelope_digest_algorithm_version = @resolution_event_envelope_digest_algorithm_version::text,
       resolution_event_envelope_sha256 = @resolution_event_envelope_sha256::text,
       resolution_operation_id = @resolution_operation_id::uuid, resolution_applied_ref = @resolution_applied_ref::text,
       resolution_applied_schema_version = @resolution_applied_schema_version::text,
       resolution_applied_digest_algorithm_version = @resolution_applied_digest_algorithm_version::text,
       resolution_applied_digest = @resolution_applied_digest::text,
       resolution_actor_workforce_principal_id = @resolution_actor_workforce_principal_id::text,
       resolved_at = @resolved_at::timestamptz, closed_at = @now::timestamptz
 WHERE reconciliation_case_ref = @reconciliation_case_ref
   AND projection_name = @projection_name AND projection_version = @projection_version AND state = 'open';
