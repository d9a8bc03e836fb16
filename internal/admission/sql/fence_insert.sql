-- name: FenceInsert
-- The unique fence, pending_evaluation with generation 1 active (the
-- deferred foreign key proves generation 1's Work exists at commit).
-- $1 fence id, $2 reservation id, $3 run id, $4 created at.
INSERT INTO admission.billing_finalization_fences (billing_finalization_fence_id, billing_reservation_id, run_id,
    finalization_fence_revision, coordination_state, active_work_generation, latest_work_generation,
    closure_watermark_state, settlement_input_watermark_state, created_at)
VALUES ($1, $2, $3, 1, 'pending_evaluation', 1, 1, 'none', 'none', $4)
