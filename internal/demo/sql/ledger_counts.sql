-- name: LedgerCounts
-- The ledger's end state and its invariants in one snapshot (the demo's
-- summary; sqlc cannot read the billing line, whose first migration moves
-- tables between schemas, so this file is loaded by db.MustLoadStatements).
SELECT
  (SELECT count(*) FROM billing.reservation_states),
  (SELECT count(*) FROM billing.reservation_states WHERE state IN ('settled', 'released')),
  (SELECT count(*) FROM billing.finalization_committed WHERE decision = 'settle_and_release_remainder'),
  (SELECT count(*) FROM billing.finalization_committed WHERE decision = 'release_all'),
  (SELECT count(*) FROM billing.finalization_decisions WHERE decision = 'blocked'),
  -- reconciliation_required evaluations: recorded as deferred (a worker
  -- that enters no case) or entering a case generation
  (SELECT count(*) FROM billing.finalization_evaluations WHERE outcome = 'reconciliation_deferred'),
  (SELECT count(*) FROM billing.finalization_evaluations WHERE outcome = 'reconciliation_required'),
  -- fences in a reconciliation case, fences that wait as
  -- reconciliation_deferred (a worker that enters no case recorded the
  -- decision) and fences left in any other wait
  (SELECT count(*) FROM billing.billing_finalization_fences WHERE coordination_state = 'reconciliation_required'),
  (SELECT count(*) FROM billing.billing_finalization_fences
    WHERE coordination_state = 'awaiting_finalization' AND waiting_reason LIKE 'reconciliation_deferred:%'),
  (SELECT count(*) FROM billing.billing_finalization_fences
    WHERE coordination_state NOT IN ('committed', 'reconciliation_required')
      AND NOT (coordination_state = 'awaiting_finalization' AND waiting_reason LIKE 'reconciliation_deferred:%')),
  (SELECT COALESCE(sum(reserved_amount), 0)::text FROM billing.reservation_states),
  (SELECT COALESCE(sum(settled_amount), 0)::text FROM billing.reservation_states),
  (SELECT COALESCE(sum(released_amount), 0)::text FROM billing.reservation_states),
  -- one finalization per reservation: committed facts and committed events
  (SELECT count(*) FROM (SELECT billing_reservation_id FROM billing.finalization_committed
                         GROUP BY 1 HAVING count(*) > 1) x),
  (SELECT count(*) FROM (SELECT aggregate_id FROM outbox.outbox_events
                         WHERE event_type = 'billing.finalization.committed@1' GROUP BY 1 HAVING count(*) > 1) x),
  (SELECT count(*) FROM billing.reservation_states r
    WHERE r.state <> 'reserved'
      AND (SELECT count(*) FROM outbox.outbox_events e
            WHERE e.event_type = 'billing.finalization.committed@1' AND e.aggregate_id = r.billing_reservation_id::text) <> 1),
  -- settled + released = reserved, on the reservation and on the fact
  (SELECT count(*) FROM billing.reservation_states
    WHERE state <> 'reserved' AND settled_amount + released_amount <> reserved_amount),
  (SELECT count(*) FROM billing.finalization_committed c JOIN billing.reservation_states r USING (billing_reservation_id)
    WHERE c.settled_amount + c.released_amount <> r.reserved_amount OR c.settled_amount > r.reserved_amount),
  -- ledger balanced per posting group, no negative balance
  (SELECT count(*) FROM (SELECT posting_group_id FROM billing.ledger_postings GROUP BY 1
    HAVING sum(amount) FILTER (WHERE direction = 'debit') IS DISTINCT FROM sum(amount) FILTER (WHERE direction = 'credit')) x),
  (SELECT count(*) FROM billing.ledger_balances WHERE balance < 0),
  -- admission → finalization latency
  (SELECT COALESCE(1000 * EXTRACT(EPOCH FROM percentile_cont(0.5) WITHIN GROUP (ORDER BY finalized_at - created_at)), 0)
     FROM billing.reservation_states WHERE finalized_at IS NOT NULL),
  (SELECT COALESCE(1000 * EXTRACT(EPOCH FROM percentile_cont(0.99) WITHIN GROUP (ORDER BY finalized_at - created_at)), 0)
     FROM billing.reservation_states WHERE finalized_at IS NOT NULL),
  -- the same without the runs whose closure waited for a provider's
  -- dispute (@disputed_runs): their time is the dispute's protocol
  (SELECT COALESCE(1000 * EXTRACT(EPOCH FROM percentile_cont(0.5) WITHIN GROUP (ORDER BY finalized_at - created_at)), 0)
     FROM billing.reservation_states WHERE finalized_at IS NOT NULL AND run_id <> ALL(@disputed_runs::uuid[])),
  (SELECT COALESCE(1000 * EXTRACT(EPOCH FROM percentile_cont(0.99) WITHIN GROUP (ORDER BY finalized_at - created_at)), 0)
     FROM billing.reservation_states WHERE finalized_at IS NOT NULL AND run_id <> ALL(@disputed_runs::uuid[]));
