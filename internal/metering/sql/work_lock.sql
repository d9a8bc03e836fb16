-- name: WorkLock
-- Lock the Work's queue row before reading its latest attempt: a claim
-- leases this same row (UPDATE) in the transaction that starts its attempt,
-- so a superseded finish and a concurrent claim serialise and the finish is
-- bound to the attempt that is really the latest. No row: already finished.
SELECT 1 FROM metering.pending_works WHERE work_ref = @work_ref FOR UPDATE;
