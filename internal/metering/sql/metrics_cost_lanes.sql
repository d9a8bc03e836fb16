-- Provider cost lanes whose cost is not processed, by state (partial index
-- cost_lane_coordination_attention).
SELECT state, count(*)::float8
  FROM metering.cost_lane_coordination
 WHERE state IN ('waiting_for_evidence', 'reconciliation_required', 'blocked_on_processing_conflict')
 GROUP BY 1;
