-- Catch-up fences not caught up, by state (partial index
-- settlement_catch_up_fences_unsettled).
SELECT coordination_state, count(*)::float8
  FROM billing.settlement_catch_up_fences
 WHERE coordination_state <> 'caught_up'
 GROUP BY 1;
