-- name: WorkEnqueue
-- Queue a Work for the workers of its lane unless it is already finished.
INSERT INTO metering.pending_works (work_ref, lane_kind)
SELECT w.work_ref, w.lane_kind FROM metering.input_works w
WHERE w.work_ref = @work_ref::text
  AND NOT EXISTS (SELECT 1 FROM metering.work_finishes f WHERE f.work_ref = @work_ref::text)
ON CONFLICT (work_ref) DO NOTHING;
