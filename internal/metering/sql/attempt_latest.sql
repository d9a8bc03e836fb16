-- name: AttemptLatest
-- The Work's latest attempt (the only one whose token may finish it).
SELECT attempt_number, fencing_token::text AS fencing_token
FROM metering.work_attempts WHERE work_ref = @work_ref
ORDER BY attempt_number DESC LIMIT 1;
