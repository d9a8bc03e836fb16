-- name: OwnerBlockLatest
-- The Work's latest block when it names an owner's conflict fact (primary
-- key, backwards): a blocked Work retried while the owner's conflict
-- persists returns it instead of writing another Blocked@1 on every lease.
SELECT blocked_body, owner_conflict_kind, owner_conflict_fact_ref, owner_conflict_fact_digest
  FROM metering.work_blocks
 WHERE work_ref = @work_ref
 ORDER BY attempt_number DESC
 LIMIT 1;
