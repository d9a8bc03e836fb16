-- name: MoneyBillingTotals
-- The money of the core database in one row (issue 36, OBS-4): reservations
-- by state, the amounts that must add up, the ledger's debit and credit
-- totals, and the reservations waiting with reconciliation deferred. Every
-- check is computed here, never assumed by the caller.
-- Cost: these totals scan history on purpose — billing.reservation_states
-- (one row per reservation) and billing.ledger_postings (every posting line,
-- twice: the totals and the per-group balance). The overview is read on
-- demand, not on a hot path; the statement timeout bounds it.
-- Loaded, not sqlc: sqlc cannot read the billing line, whose first
-- migration moves tables between schemas.
WITH r AS (
  SELECT count(*) AS reservations,
         count(*) FILTER (WHERE state = 'settled') AS settled,
         count(*) FILTER (WHERE state = 'released') AS released,
         count(*) FILTER (WHERE state = 'reserved') AS still_reserved,
         COALESCE(sum(reserved_amount), 0) AS reserved_amount,
         COALESCE(sum(settled_amount), 0) AS settled_amount,
         COALESCE(sum(released_amount), 0) AS released_amount,
         COALESCE(sum(reserved_amount) FILTER (WHERE state = 'reserved'), 0) AS held_amount
    FROM billing.reservation_states),
p AS (
  SELECT COALESCE(sum(amount) FILTER (WHERE direction = 'debit'), 0) AS debit,
         COALESCE(sum(amount) FILTER (WHERE direction = 'credit'), 0) AS credit,
         count(*) AS lines,
         count(DISTINCT posting_group_id) AS posting_groups
    FROM billing.ledger_postings),
-- posting groups whose own lines do not balance (each group must)
u AS (
  SELECT count(*) AS unbalanced_groups
    FROM (SELECT posting_group_id FROM billing.ledger_postings GROUP BY posting_group_id
          HAVING sum(amount) FILTER (WHERE direction = 'debit')
                 IS DISTINCT FROM sum(amount) FILTER (WHERE direction = 'credit')) x),
-- the ledger's reservation_hold balance, in the owner's sign convention
-- (the view billing.ledger_balances)
h AS (
  SELECT COALESCE(sum(balance), 0) AS hold_balance
    FROM billing.ledger_balances WHERE account_kind = 'reservation_hold'),
-- fences whose evaluation deferred reconciliation without a case (the
-- cases themselves are on the Cases page, queries/cases.sql)
c AS (
  SELECT count(*) AS waiting_for_reconciliation
    FROM billing.billing_finalization_fences
   WHERE coordination_state = 'awaiting_finalization' AND waiting_reason LIKE 'reconciliation_deferred:%')
SELECT r.reservations, r.settled, r.released, r.still_reserved,
       r.reserved_amount::text AS reserved_amount, r.settled_amount::text AS settled_amount,
       r.released_amount::text AS released_amount, r.held_amount::text AS held_amount,
       (r.reserved_amount = r.settled_amount + r.released_amount + r.held_amount) AS reservations_add_up,
       p.debit::text AS debit, p.credit::text AS credit, p.lines, p.posting_groups, u.unbalanced_groups,
       (p.debit = p.credit AND u.unbalanced_groups = 0) AS ledger_balanced,
       h.hold_balance::text AS hold_balance, (h.hold_balance = r.held_amount) AS hold_matches_held,
       c.waiting_for_reconciliation
  FROM r, p, u, h, c
