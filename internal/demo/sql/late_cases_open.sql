-- name: LateCasesOpen
-- The open late settlement cases of the active projection, each with the
-- exposure an operator funds: its latest unresolved one (the highest
-- settlement state revision Billing recorded it at).
SELECT DISTINCT ON (c.reconciliation_case_ref)
       c.reconciliation_case_ref, c.case_generation, x.late_settlement_exposure_id,
       x.exposure_ref, x.exposure_schema_version, x.exposure_digest_algorithm_version, x.exposure_digest
  FROM operations.late_settlement_cases c
  JOIN outbox.active_projections p ON p.projection_name = c.projection_name AND p.projection_version = c.projection_version
  JOIN operations.late_settlement_case_exposures x
    ON x.reconciliation_case_ref = c.reconciliation_case_ref AND x.projection_name = c.projection_name
   AND x.projection_version = c.projection_version AND x.resolved_at IS NULL
  JOIN billing.late_settlement_exposures e ON e.late_settlement_exposure_id = x.late_settlement_exposure_id
 WHERE c.state = 'open'
 ORDER BY c.reconciliation_case_ref, e.settlement_state_revision DESC;
