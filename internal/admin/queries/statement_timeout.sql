-- name: StatementTimeoutSet :exec
-- Bounds every statement of the read-only transaction (server side).
SELECT pg_catalog.set_config('statement_timeout', @timeout::text, true);
