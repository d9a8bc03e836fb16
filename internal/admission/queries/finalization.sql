-- name: FenceInsert :exec
-- The unique fence, pending_evaluation with generation 1 active (the
-- deferred foreign key proves generation 1's Work exists at commit).
INSERT INTO admission.billing_finalization_fences (billing_finalization_fence_id, billing_reservation_id, run_id,
    finalization_fence_revision, coordination_state, active_work_generation, latest_work_generation,
    closure_watermark_state, settlement_input_watermark_state, created_at)
VALUES (@billing_finalization_fence_id, @billing_reservation_id, @run_id, 1, 'pending_evaluation', 1, 1, 'none', 'none',
    @created_at);

-- name: TriggerSnapshotInsert :exec
INSERT INTO admission.billing_finalization_trigger_snapshots (trigger_snapshot_ref, trigger_snapshot_schema_version,
    trigger_snapshot_digest_algorithm_version, trigger_snapshot_digest, billing_finalization_fence_id,
    work_generation, snapshot_body, captured_at)
VALUES (@trigger_snapshot_ref, @trigger_snapshot_schema_version, @trigger_snapshot_digest_algorithm_version,
    @trigger_snapshot_digest, @billing_finalization_fence_id, @work_generation, @snapshot_body, @captured_at);

-- name: WorkInsert :exec
-- The first durable Work, waiting: closure_event_not_applied (ADR-031).
INSERT INTO admission.billing_finalization_works (billing_finalization_fence_id, work_generation, work_ref,
    work_schema_version, work_digest_algorithm_version, work_digest, billing_finalization_operation_id,
    trigger_snapshot_ref, work_body, work_state, waiting_reason, created_at)
VALUES (@billing_finalization_fence_id, @work_generation, @work_ref, @work_schema_version, @work_digest_algorithm_version,
    @work_digest, @billing_finalization_operation_id, @trigger_snapshot_ref, @work_body, 'waiting',
    'closure_event_not_applied', @created_at);
