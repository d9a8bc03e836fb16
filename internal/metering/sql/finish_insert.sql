-- name: FinishInsert
-- Insert-or-compare of the Work's one finish (the caller compares digests).
WITH ins AS (
  INSERT INTO metering.work_finishes (work_ref, attempt_number, fencing_token, finished_ref, finished_digest,
    outcome_state, finished_body)
  VALUES (@work_ref, @attempt_number, @fencing_token, @finished_ref, @finished_digest, @outcome_state, @finished_body)
  ON CONFLICT (work_ref) DO NOTHING
  RETURNING finished_ref, finished_digest, finished_body
)
SELECT finished_ref, finished_digest, finished_body FROM ins
UNION ALL
SELECT finished_ref, finished_digest, finished_body FROM metering.work_finishes WHERE work_ref = @work_ref
LIMIT 1;
