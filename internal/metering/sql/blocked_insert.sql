-- name: BlockedInsert
-- Insert-or-compare of one attempt's MeteringInputWorkAttemptBlocked@1.
WITH ins AS (
  INSERT INTO metering.work_attempt_blocks (work_ref, attempt_number, blocked_ref, blocked_digest, blocking_cause_kind, blocked_body)
  VALUES (@work_ref, @attempt_number, @ref, @digest, @cause_kind, @body)
  ON CONFLICT (work_ref, attempt_number) DO NOTHING
  RETURNING blocked_ref, blocked_digest, blocked_body
)
SELECT blocked_ref, blocked_digest, blocked_body FROM ins
UNION ALL
SELECT blocked_ref, blocked_digest, blocked_body FROM metering.work_attempt_blocks WHERE work_ref = @work_ref AND attempt_number = @attempt_number
LIMIT 1;
