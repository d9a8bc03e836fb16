-- name: BlockLatest
-- The Work's latest Blocked@1 and its evidence (primary key, backwards):
-- a blocked Work retried on the same conflict returns it instead of
-- writing another Blocked and evidence on every lease.
SELECT blocked_body, evidence_body FROM metering.work_blocks
WHERE work_ref = @work_ref
ORDER BY attempt_number DESC
LIMIT 1;
