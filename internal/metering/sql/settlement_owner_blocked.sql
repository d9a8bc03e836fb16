-- name: SettlementOwnerBlocked
-- The owner block of a settlement dimension's attempt, if any: the latest
-- Blocked@1 of the attempt's latest eligibility Work, when that Work is
-- unfinished and the block names an owner's conflict fact (the lane is
-- blocked_on_owner_conflict). Primary- and unique-key lookups only.
SELECT b.blocked_ref, b.blocked_body
  FROM metering.settlement_input_current c
  JOIN metering.input_fences f ON f.execution_attempt_id = c.execution_attempt_id
  JOIN metering.input_works w ON w.execution_attempt_id = f.execution_attempt_id
   AND w.lane_kind = 'eligibility_and_settlement_input' AND w.gateway_deployment_id = '' AND w.source_evidence_dimension_key = ''
   AND w.work_generation = f.latest_eligibility_work_generation
  JOIN LATERAL (SELECT * FROM metering.work_blocks x WHERE x.work_ref = w.work_ref ORDER BY x.attempt_number DESC LIMIT 1) b ON true
 WHERE c.settlement_dimension_id = @settlement_dimension_id
   AND b.owner_conflict_kind IS NOT NULL
   AND NOT EXISTS (SELECT 1 FROM metering.work_finishes e WHERE e.work_ref = w.work_ref);
