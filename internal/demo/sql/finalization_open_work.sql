-- name: FinalizationOpenWork
-- Fences whose closure is applied and whose Work still waits for the
-- finalization worker (the partial index on pending_evaluation fences).
SELECT count(*) FROM billing.billing_finalization_fences
 WHERE coordination_state = 'pending_evaluation' AND closure_watermark_state = 'applied';
