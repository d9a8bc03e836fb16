-- Active Work (the queue holds only unfinished Work) whose attempts
-- recorded a visible Blocked fact, by lane.
SELECT pw.lane_kind, count(*)::float8
  FROM metering.pending_works pw
 WHERE EXISTS (SELECT 1 FROM metering.work_blocks b WHERE b.work_ref = pw.work_ref)
 GROUP BY 1;
