-- name: MoneyMeteringBlockedLanes
-- Active Work (metering.pending_works holds one row per Work not finished
-- yet) that has a recorded Blocked fact (metering.work_blocks, same
-- work_ref), by lane, with the oldest queued. The queue holds active Work
-- only and the EXISTS probes work_blocks' primary key (work_ref,
-- attempt_number): cheap.
SELECT p.lane_kind AS lane, count(*) AS blocked, min(p.queued_at) AS oldest_queued_at
  FROM metering.pending_works p
 WHERE EXISTS (SELECT 1 FROM metering.work_blocks b WHERE b.work_ref = p.work_ref)
 GROUP BY p.lane_kind
 ORDER BY p.lane_kind
