-- The dimension's catch-up fence, locked.
SELECT settlement_dimension_id, billing_reservation_id, billing_account_id, run_id, run_step_id, execution_attempt_id,
       charge_dimension_key, economic_identity, tenant_kind, tenant_id, workspace_id, project_id, correlation_id,
       finalization_committed_ref, finalization_committed_schema_version, finalization_committed_digest_algorithm_version,
       finalization_committed_digest, finalization_event_id, fence_revision, settlement_state_revision,
       settled_amount::text AS settled_amount, last_evaluated_ref, last_evaluated_schema_version,
       last_evaluated_digest_algorithm_version, last_evaluated_digest, last_evaluated_state_version, last_event_id,
       coordination_state, active_work_generation
FROM billing.settlement_catch_up_fences
WHERE settlement_dimension_id = @settlement_dimension_id
FOR UPDATE
