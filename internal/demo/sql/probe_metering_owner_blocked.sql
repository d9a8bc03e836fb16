-- name: ProbeMeteringOwnerBlocked
-- A disputed attempt's wait (issue 32): has an eligibility Work of the
-- attempt recorded Blocked@1 on an owner's conflict fact?
SELECT EXISTS (SELECT 1 FROM metering.input_works w
  JOIN metering.work_blocks b ON b.work_ref = w.work_ref
 WHERE w.execution_attempt_id = $1::uuid AND w.lane_kind = 'eligibility_and_settlement_input'
   AND b.owner_conflict_kind IS NOT NULL);
