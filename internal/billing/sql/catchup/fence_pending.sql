-- Fences waiting for verification, oldest first (partial index
-- settlement_catch_up_fences_pending; never reads caught-up history).
SELECT settlement_dimension_id
FROM billing.settlement_catch_up_fences
WHERE coordination_state = 'pending_verification'
ORDER BY updated_at, settlement_dimension_id
LIMIT @limit
FOR UPDATE SKIP LOCKED
