-- name: ViewReservation :one
-- One reservation's billing state by exact id (inspect, admin).
SELECT s.billing_reservation_id, s.billing_account_id, s.run_id, s.economic_identity, s.reserved_amount::text AS reserved_amount,
       s.state, COALESCE(s.settled_amount::text, ''::text)::text AS settled_amount, COALESCE(s.released_amount::text, ''::text)::text AS released_amount,
       s.committed_ref,
       f.billing_finalization_fence_id, f.coordination_state, f.finalization_fence_revision, f.active_work_generation,
       f.latest_work_generation, f.closure_watermark_state, f.settlement_input_watermark_state, f.waiting_reason
  FROM billing.reservation_states s
  JOIN billing.billing_finalization_fences f ON f.billing_reservation_id = s.billing_reservation_id
 WHERE s.billing_reservation_id = @billing_reservation_id;

-- name: ViewPostings :many
SELECT g.group_kind, p.posting_group_id, p.line_no, p.account_kind, p.direction, p.amount::text AS amount, p.posted_at
  FROM billing.ledger_postings p
  JOIN billing.ledger_posting_groups g USING (posting_group_id)
 WHERE p.billing_reservation_id = @billing_reservation_id
 ORDER BY p.posted_at, p.posting_group_id, p.line_no;

-- name: ViewEvaluations :many
SELECT work_generation, billing_finalization_operation_id, outcome, reason_code, reason_detail, recorded_at
  FROM billing.finalization_evaluations
 WHERE billing_finalization_fence_id = @billing_finalization_fence_id
 ORDER BY work_generation;
