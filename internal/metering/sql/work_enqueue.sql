-- name: WorkEnqueue
-- Queue a Work for the workers unless it is already finished.
INSERT INTO metering.pending_works (work_ref)
SELECT @work_ref::text WHERE NOT EXISTS (SELECT 1 FROM metering.work_finishes WHERE work_ref = @work_ref::text)
ON CONFLICT (work_ref) DO NOTHING;
