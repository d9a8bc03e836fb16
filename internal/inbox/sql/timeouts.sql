-- Bounds every lock wait and statement of the consumer transaction, so that
-- contention surfaces as a retryable error instead of a stuck delivery.
-- Both values are PostgreSQL interval text, e.g. '5000ms'.
SELECT set_config('lock_timeout', @lock_timeout, true), set_config('statement_timeout', @statement_timeout, true)
