-- Closure and eligibility lock the attempts and eligibility facts (FOR
-- SHARE), which PostgreSQL allows only with an UPDATE privilege on some
-- column. The role gets UPDATE on the key column alone; the immutability
-- triggers (EX001) still refuse every update, so the grant only permits the
-- row locks.

-- +goose Up
-- +goose StatementBegin
GRANT UPDATE (execution_attempt_id) ON execution.attempts, execution.eligibility_facts TO oceanway_execution;
-- +goose StatementEnd
