-- name: MoneyMeteringBlockedList
-- The blocked active Work, oldest queued first, at most @row_limit (the
-- caller asks one more than it shows), each with its latest Blocked fact:
-- the blocking cause (blockingCause.kind of the Blocked body) and, when
-- its evidence body carries them, the reason code and validation stage
-- (top level for eligibility evidence, under cause for provider cost
-- evidence) and the run id.
SELECT p.work_ref, p.lane_kind AS lane, p.queued_at, b.attempt_number, b.recorded_at AS blocked_at,
       (b.blocked_body::jsonb -> 'blockingCause' ->> 'kind') AS cause,
       COALESCE(b.evidence_body::jsonb ->> 'reasonCode', b.evidence_body::jsonb -> 'cause' ->> 'reasonCode') AS reason,
       COALESCE(b.evidence_body::jsonb ->> 'validationStage', b.evidence_body::jsonb -> 'cause' ->> 'validationStage') AS stage,
       (b.evidence_body::jsonb ->> 'runId') AS run_id,
       w.execution_attempt_id::text AS execution_attempt_id
  FROM metering.pending_works p
  JOIN LATERAL (SELECT * FROM metering.work_blocks x WHERE x.work_ref = p.work_ref
                ORDER BY x.attempt_number DESC LIMIT 1) b ON true
  LEFT JOIN metering.input_works w ON w.work_ref = p.work_ref
 ORDER BY p.queued_at, p.work_ref
 LIMIT @row_limit
