-- name: OwnerConflictsMetering
-- Issue 32 on the metering database: the eligibility Works that recorded
-- Blocked@1 on an owner's conflict fact and how many of them finished
-- (superseded by the owner's fix, or applied on retry); the lanes they
-- blocked and how many of those ended applied (their latest eligibility
-- Work finished applied); the SettlementInputConflictFact@1 rows.
WITH blocked AS (
  SELECT DISTINCT b.work_ref, w.execution_attempt_id
    FROM metering.work_blocks b JOIN metering.input_works w ON w.work_ref = b.work_ref
   WHERE b.owner_conflict_kind IS NOT NULL),
lanes AS (SELECT DISTINCT execution_attempt_id FROM blocked)
SELECT
  (SELECT count(*) FROM blocked),
  (SELECT count(*) FROM blocked b WHERE EXISTS (SELECT 1 FROM metering.work_finishes f WHERE f.work_ref = b.work_ref)),
  (SELECT count(*) FROM lanes),
  (SELECT count(*) FROM lanes l
     JOIN metering.input_fences f ON f.execution_attempt_id = l.execution_attempt_id
     JOIN metering.input_works w ON w.execution_attempt_id = f.execution_attempt_id
      AND w.lane_kind = 'eligibility_and_settlement_input' AND w.gateway_deployment_id = '' AND w.source_evidence_dimension_key = ''
      AND w.work_generation = f.latest_eligibility_work_generation
     JOIN metering.work_finishes x ON x.work_ref = w.work_ref AND x.outcome_state = 'applied'),
  (SELECT count(*) FROM metering.settlement_input_conflict_facts);
