-- name: OwnerBlockInsert
-- One Blocked@1 on an owner's conflict fact per attempt (issue 32): the
-- owner branch of blockingCause with the fact's quadruple, no Metering
-- evidence (ME016); insert-or-find.
WITH ins AS (
  INSERT INTO metering.work_blocks (work_ref, attempt_number, fencing_token, blocked_ref, blocked_digest, blocked_body,
    owner_conflict_kind, owner_conflict_fact_ref, owner_conflict_fact_schema_version,
    owner_conflict_fact_digest_algorithm_version, owner_conflict_fact_digest)
  VALUES (@work_ref, @attempt_number, @fencing_token, @blocked_ref, @blocked_digest, @blocked_body,
    @owner_conflict_kind, @owner_conflict_fact_ref, @owner_conflict_fact_schema_version,
    @owner_conflict_fact_digest_algorithm_version, @owner_conflict_fact_digest)
  ON CONFLICT (work_ref, attempt_number) DO NOTHING
  RETURNING blocked_body
)
SELECT blocked_body FROM ins
UNION ALL
SELECT blocked_body FROM metering.work_blocks WHERE work_ref = @work_ref AND attempt_number = @attempt_number
LIMIT 1;
