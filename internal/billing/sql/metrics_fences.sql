-- Unfinished finalization fences by state and visible waiting reason, with
-- the age of the oldest (partial index billing_finalization_fences_unfinished).
SELECT coordination_state, COALESCE(waiting_reason, ''), count(*)::float8,
       COALESCE(EXTRACT(EPOCH FROM now() - min(updated_at)), 0)::float8
  FROM billing.billing_finalization_fences
 WHERE coordination_state <> 'committed'
 GROUP BY 1, 2;
