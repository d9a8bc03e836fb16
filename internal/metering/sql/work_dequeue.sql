-- name: WorkDequeue
DELETE FROM metering.pending_works WHERE work_ref = @work_ref;
