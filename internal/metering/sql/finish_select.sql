-- name: FinishSelect
-- The one finish of a Work, if any (primary key).
SELECT outcome_state, finished_body FROM metering.work_finishes WHERE work_ref = @work_ref;
