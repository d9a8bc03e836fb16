-- name: WorkInsert
-- The first durable Work, waiting: closure_event_not_applied (ADR-031).
-- $1 fence id, $2 generation, $3..$6 work quadruple, $7 operation id,
-- $8 trigger snapshot ref, $9 body, $10 created at.
INSERT INTO admission.billing_finalization_works (billing_finalization_fence_id, work_generation, work_ref,
    work_schema_version, work_digest_algorithm_version, work_digest, billing_finalization_operation_id,
    trigger_snapshot_ref, work_body, work_state, waiting_reason, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'waiting', 'closure_event_not_applied', $10)
