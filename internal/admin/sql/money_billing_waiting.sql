-- name: MoneyBillingWaiting
-- Unfinished finalization fences (every state but committed) by state and
-- waiting reason, each group with its count and its oldest fence: the
-- reservation that has been in the group longest, since the fence's last
-- change (updated_at; created_at for a fence never changed).
-- Cost: the WHERE is the predicate of the billing line's partial index on
-- unfinished fences (billing_finalization_fences_unfinished, issue 36), so
-- the planner reads the open fences only; the older partial index
-- billing_finalization_fences_pending covers pending_evaluation alone.
-- Without the former this is a scan of billing.billing_finalization_fences
-- (one row per reservation), bounded by the statement timeout (on demand).
SELECT DISTINCT ON (f.coordination_state, f.waiting_reason)
       f.coordination_state,
       COALESCE(f.waiting_reason, '') AS waiting_reason,
       count(*) OVER (PARTITION BY f.coordination_state, f.waiting_reason) AS fences,
       f.billing_reservation_id::text AS oldest_reservation_id,
       COALESCE(f.updated_at, f.created_at) AS oldest_since
  FROM billing.billing_finalization_fences f
 WHERE f.coordination_state <> 'committed'
 ORDER BY f.coordination_state, f.waiting_reason, COALESCE(f.updated_at, f.created_at), f.billing_reservation_id
