-- Claims up to @limit claimable catch-up Work generations, oldest first:
-- only the partial index of claimable rows is read (never caught-up
-- history), SKIP LOCKED so workers never wait on each other. Each claim is
-- a new attempt (the Started log) with a fresh fencing token and a lease;
-- the row is not claimable again until the lease ends (or the worker
-- releases it).
WITH due AS (
  SELECT settlement_dimension_id
  FROM billing.settlement_catch_up_claims
  WHERE available_at < 'infinity' AND available_at <= @now
  ORDER BY available_at, settlement_dimension_id
  LIMIT @limit
  FOR UPDATE SKIP LOCKED
), claimed AS (
  UPDATE billing.settlement_catch_up_claims c
  SET attempt_number = c.attempt_number + 1, available_at = @lease_expires_at
  FROM due
  WHERE c.settlement_dimension_id = due.settlement_dimension_id
  RETURNING c.settlement_dimension_id, c.work_generation, c.attempt_number
)
INSERT INTO billing.settlement_catch_up_attempts (settlement_dimension_id, work_generation, attempt_number, fencing_token,
  started_at, lease_expires_at)
SELECT settlement_dimension_id, work_generation, attempt_number, gen_random_uuid(), @now, @lease_expires_at
FROM claimed
RETURNING settlement_dimension_id::text, work_generation, attempt_number, fencing_token::text, lease_expires_at
