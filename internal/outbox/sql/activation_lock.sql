-- name: ActivationLock
-- The cutover lock: exclusive against every append (which holds it shared).
SELECT pg_advisory_xact_lock(outbox.activation_lock_key())
