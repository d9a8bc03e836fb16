-- name: CostBlockInsert
-- Insert-or-compare of one attempt's MeteringInputWorkAttemptBlocked@1 with
-- its ProviderCostProcessingConflictEvidence@1 (metering.work_blocks; the
-- table's trigger refuses a token that is not the Work's latest).
WITH ins AS (
  INSERT INTO metering.work_blocks (work_ref, attempt_number, fencing_token, blocked_ref, blocked_digest, blocked_body,
    evidence_ref, evidence_digest, evidence_body)
  VALUES (@work_ref, @attempt_number, @fencing_token, @blocked_ref, @blocked_digest, @blocked_body,
    @evidence_ref, @evidence_digest, @evidence_body)
  ON CONFLICT (work_ref, attempt_number) DO NOTHING
  RETURNING blocked_digest, blocked_body, evidence_digest, evidence_body
)
SELECT blocked_digest, blocked_body, evidence_digest, evidence_body FROM ins
UNION ALL
SELECT blocked_digest, blocked_body, evidence_digest, evidence_body FROM metering.work_blocks
WHERE work_ref = @work_ref AND attempt_number = @attempt_number
LIMIT 1;
