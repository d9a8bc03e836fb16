-- name: AttemptStart
INSERT INTO metering.work_attempts (work_ref, attempt_number, fencing_token, lease_until)
SELECT @work_ref, coalesce(max(attempt_number), 0) + 1, @fencing_token, now() + make_interval(secs => @lease_seconds)
FROM metering.work_attempts WHERE work_ref = @work_ref
RETURNING attempt_number;
