-- name: CostWorkRelease
-- A blocked attempt releases its lease: the same queued Work is claimable
-- again after the retry delay (a new attempt, a new token).
UPDATE metering.pending_works SET lease_until = now() + make_interval(secs => @retry_seconds) WHERE work_ref = @work_ref;
