-- name: CatchUpPending
-- Catch-up fences pending verification (the partial index).
SELECT settlement_dimension_id::text
FROM billing.settlement_catch_up_fences
WHERE coordination_state = 'pending_verification';
