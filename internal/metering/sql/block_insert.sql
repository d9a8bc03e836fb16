-- name: BlockInsert
-- One Blocked@1 (with its conflict evidence) per attempt; insert-or-find.
WITH ins AS (
  INSERT INTO metering.work_blocks (work_ref, attempt_number, fencing_token, blocked_ref, blocked_digest, blocked_body,
    evidence_ref, evidence_digest, evidence_body)
  VALUES (@work_ref, @attempt_number, @fencing_token, @blocked_ref, @blocked_digest, @blocked_body,
    @evidence_ref, @evidence_digest, @evidence_body)
  ON CONFLICT (work_ref, attempt_number) DO NOTHING
  RETURNING blocked_body
)
SELECT blocked_body FROM ins
UNION ALL
SELECT blocked_body FROM metering.work_blocks WHERE work_ref = @work_ref AND attempt_number = @attempt_number
LIMIT 1;
