-- name: ProbeMeteringApplied
-- A disputed attempt's wait (issue 32): does the attempt have a Current
-- settlement input on the metering database (the pointer's attempt index)?
SELECT EXISTS (SELECT 1 FROM metering.settlement_input_current WHERE execution_attempt_id = $1::uuid);
