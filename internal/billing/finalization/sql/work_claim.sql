-- name: WorkClaim
-- Claims one fence whose active Work is runnable: the fence row stays
-- locked for the evaluation's transaction (SKIP LOCKED: concurrent workers
-- take other fences), so the Work generation and fence revision read here
-- are the ones the commit writes under. The partial index on
-- pending_evaluation fences keeps this independent of history.
SELECT f.billing_finalization_fence_id, f.active_work_generation, f.finalization_fence_revision,
       w.billing_finalization_operation_id
  FROM billing.billing_finalization_fences f
  JOIN billing.billing_finalization_works w
    ON w.billing_finalization_fence_id = f.billing_finalization_fence_id AND w.work_generation = f.active_work_generation
 WHERE f.coordination_state = 'pending_evaluation'
   AND f.closure_watermark_state = 'applied'
   AND w.work_state = 'pending'
 LIMIT 1
   FOR UPDATE OF f SKIP LOCKED;
