-- name: CatchUpOpenWork
-- Catch-up fences whose Work still waits for the catch-up worker (the
-- partial index on pending_verification fences).
SELECT count(*) FROM billing.settlement_catch_up_fences WHERE coordination_state = 'pending_verification';
