-- name: TriggerSnapshotInsert :exec
INSERT INTO billing.billing_finalization_trigger_snapshots (trigger_snapshot_ref, trigger_snapshot_schema_version,
    trigger_snapshot_digest_algorithm_version, trigger_snapshot_digest, billing_finalization_fence_id,
    work_generation, snapshot_body, captured_at)
VALUES (@trigger_snapshot_ref, @trigger_snapshot_schema_version, @trigger_snapshot_digest_algorithm_version,
    @trigger_snapshot_digest, @billing_finalization_fence_id, @work_generation, @snapshot_body, @captured_at);

-- name: WorkInsert :exec
-- Generation 1 waits (closure_event_not_applied); later ones are pending.
INSERT INTO billing.billing_finalization_works (billing_finalization_fence_id, work_generation, work_ref,
    work_schema_version, work_digest_algorithm_version, work_digest, billing_finalization_operation_id,
    trigger_snapshot_ref, work_body, work_state, waiting_reason, created_at)
VALUES (@billing_finalization_fence_id, @work_generation, @work_ref, @work_schema_version, @work_digest_algorithm_version,
    @work_digest, @billing_finalization_operation_id, @trigger_snapshot_ref, @work_body, @work_state,
    sqlc.narg(waiting_reason), @created_at);

-- name: WorkLock :one
SELECT billing_finalization_fence_id, work_generation, work_ref, work_schema_version, work_digest_algorithm_version,
       work_digest, billing_finalization_operation_id, work_state
  FROM billing.billing_finalization_works
 WHERE billing_finalization_fence_id = @billing_finalization_fence_id AND work_generation = @work_generation
   FOR UPDATE;

-- name: WorkFinish :exec
UPDATE billing.billing_finalization_works
   SET work_state = @work_state, waiting_reason = NULL, finished_at = @finished_at
 WHERE billing_finalization_fence_id = @billing_finalization_fence_id AND work_generation = @work_generation;

-- name: WorkSupersede :exec
-- The fence's previous active Work (waiting or pending) is superseded by a
-- new generation.
UPDATE billing.billing_finalization_works
   SET work_state = 'superseded', waiting_reason = NULL, finished_at = @finished_at
 WHERE billing_finalization_fence_id = @billing_finalization_fence_id AND work_generation = @work_generation
   AND work_state IN ('waiting', 'pending');
