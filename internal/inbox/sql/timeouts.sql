-- name: Timeouts
-- Bounds every lock wait and statement of the consumer transaction, so that
-- contention surfaces as a retryable error instead of a stuck delivery.
-- $1 lock_timeout, $2 statement_timeout (PostgreSQL interval text, e.g. '5000ms').
SELECT set_config('lock_timeout', $1, true), set_config('statement_timeout', $2, true)
