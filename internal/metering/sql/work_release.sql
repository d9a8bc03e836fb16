-- name: WorkRelease
-- A retryable failure hands the Work back after a short backoff (no fact,
-- no finish): only while the caller's attempt is still the latest.
UPDATE metering.pending_works p SET lease_until = now() + make_interval(secs => @backoff_seconds)
WHERE p.work_ref = @work_ref
  AND (SELECT a.fencing_token FROM metering.work_attempts a WHERE a.work_ref = p.work_ref
       ORDER BY a.attempt_number DESC LIMIT 1) = @fencing_token::uuid;
