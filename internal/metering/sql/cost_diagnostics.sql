-- name: CostDiagnostics
-- Cost lanes by the coordination state of their latest generation (an
-- operator read: it walks every lane).
SELECT coalesce(c.state, 'pending') AS state, count(*) AS lanes
FROM metering.cost_lanes l
LEFT JOIN metering.cost_lane_coordination c
  ON c.execution_attempt_id = l.execution_attempt_id AND c.gateway_deployment_id = l.gateway_deployment_id
 AND c.source_evidence_dimension_key = l.source_evidence_dimension_key AND c.work_generation = l.latest_work_generation
GROUP BY 1 ORDER BY 1;
