-- name: FinalizationCasesByFence :many
-- The finalization cases of one fence in one projection, by generation
-- (read under the fence's case lock, so no other projector transaction
-- changes them meanwhile).
SELECT reconciliation_case_ref, reconciliation_generation, case_identity_ref, case_identity_schema_version,
       case_identity_digest_algorithm_version, case_identity_digest, state
  FROM operations.finalization_cases
 WHERE billing_finalization_fence_id = @billing_finalization_fence_id
   AND projection_name = @projection_name AND projection_version = @projection_version
 ORDER BY reconciliation_generation;
