-- name: CatchUpCounts
-- Settlement catch-up end state and its invariants in one snapshot: the
-- transitions by kind with their amounts, the open (blocked) late
-- exposures, the fences by state, and the counts that must be zero. A
-- dimension's settlement steps are its transitions and its late settlement
-- command results (ADR-031 F → T → Late Result → T): both move the state
-- revision by one.
WITH t AS (SELECT * FROM billing.settlement_transitions),
     late AS (SELECT * FROM billing.late_settlement_command_results),
     steps AS (SELECT settlement_dimension_id, from_settlement_state_revision, to_settlement_state_revision FROM t
               UNION ALL
               SELECT settlement_dimension_id, from_settlement_state_revision, to_settlement_state_revision FROM late),
     late_per_reservation AS (
       SELECT billing_reservation_id, sum(adjustment_amount) AS funded FROM late GROUP BY billing_reservation_id),
     -- A funded post-release adjustment may take settled above reserved:
     -- that is exactly what its FundingDecision@1 allows, from the account,
     -- outside the reservation. So: finalization − refunds + adjustments +
     -- funded late results stays within reserved + the funded late amounts.
     per_reservation AS (
       SELECT r.billing_reservation_id, r.reserved_amount + COALESCE(l.funded, 0) AS allowed, COALESCE(r.settled_amount, 0)
              - COALESCE(sum(t.transition_amount) FILTER (WHERE t.transition_kind = 'refund'), 0)
              + COALESCE(sum(t.transition_amount) FILTER (WHERE t.transition_kind = 'adjustment'), 0)
              + COALESCE(l.funded, 0) AS net_settled
         FROM billing.reservation_states r JOIN t USING (billing_reservation_id)
         LEFT JOIN late_per_reservation l USING (billing_reservation_id)
        GROUP BY r.billing_reservation_id, r.reserved_amount, r.settled_amount, l.funded)
SELECT
  (SELECT count(*) FROM t WHERE transition_kind = 'refund'),
  (SELECT count(*) FROM t WHERE transition_kind = 'adjustment'),
  (SELECT count(*) FROM t WHERE transition_kind = 'late_settlement_exposure'),
  (SELECT COALESCE(sum(transition_amount) FILTER (WHERE transition_kind = 'refund'), 0)::text FROM t),
  (SELECT COALESCE(sum(transition_amount) FILTER (WHERE transition_kind = 'adjustment'), 0)::text FROM t),
  (SELECT count(*) FROM billing.late_settlement_exposures e WHERE exposure_state = 'open' AND automatic_charge = 'blocked'
      AND NOT EXISTS (SELECT 1 FROM billing.late_settlement_exposure_resolutions r WHERE r.late_settlement_exposure_id = e.late_settlement_exposure_id)),
  (SELECT COALESCE(sum(exposure_amount), 0)::text FROM billing.late_settlement_exposures),
  (SELECT count(*) FROM billing.settlement_catch_up_fences),
  (SELECT count(*) FROM billing.settlement_catch_up_fences WHERE coordination_state = 'caught_up'),
  (SELECT count(*) FROM billing.settlement_catch_up_fences WHERE coordination_state = 'pending_verification'),
  (SELECT count(*) FROM billing.settlement_catch_up_fences WHERE coordination_state = 'blocked_on_owner_conflict'),
  -- contiguous from → to: every step after the first has its predecessor
  -- step (transition or late result), and the fence's revision is 1 + its
  -- number of steps
  (SELECT count(*) FROM steps s WHERE s.to_settlement_state_revision <> s.from_settlement_state_revision + 1
      OR (s.from_settlement_state_revision > 1 AND NOT EXISTS (
          SELECT 1 FROM steps p
           WHERE p.settlement_dimension_id = s.settlement_dimension_id
             AND p.to_settlement_state_revision = s.from_settlement_state_revision))),
  (SELECT count(*) FROM billing.settlement_catch_up_fences f
    WHERE f.settlement_state_revision <> 1 + (SELECT count(*) FROM steps s WHERE s.settlement_dimension_id = f.settlement_dimension_id)),
  -- never applied twice: one step per (dimension, from) and per consumed input
  (SELECT count(*) FROM (SELECT 1 FROM steps GROUP BY settlement_dimension_id, from_settlement_state_revision HAVING count(*) > 1) x),
  (SELECT count(*) FROM (SELECT 1 FROM t GROUP BY settlement_dimension_id, settlement_input_state_version HAVING count(*) > 1) x),
  -- one billing.settlement-transition.committed@1 per transition
  (SELECT count(*) FROM t WHERE (SELECT count(*) FROM outbox.outbox_events e
     WHERE e.event_id = t.event_id AND e.event_type = 'billing.settlement-transition.committed@1') <> 1),
  -- settled (finalization ± transitions + funded late results) never above
  -- reserved + funded late amounts, never below zero
  (SELECT count(*) FROM per_reservation WHERE net_settled > allowed OR net_settled < 0),
  -- every exposure transition has its open, blocked exposure
  (SELECT count(*) FROM t WHERE transition_kind = 'late_settlement_exposure' AND NOT EXISTS (
     SELECT 1 FROM billing.late_settlement_exposures e
      WHERE e.settlement_dimension_id = t.settlement_dimension_id AND e.settlement_state_revision = t.to_settlement_state_revision));
