-- name: LateCaseCounts
-- The late settlement exposure cases' end state and their invariants in
-- one snapshot (issue 32): Billing's exposures, the case generations they
-- asked for, the late settlement commands and resolutions; Operations'
-- cases and case exposures (active projection); the three late pairs'
-- events and deliveries.
WITH e AS (SELECT * FROM billing.late_settlement_exposures),
     g AS (SELECT * FROM billing.late_settlement_cases),
     r AS (SELECT * FROM billing.late_settlement_command_results),
     rs AS (SELECT * FROM billing.late_settlement_exposure_resolutions),
     c AS (SELECT c.* FROM operations.late_settlement_cases c
             JOIN outbox.active_projections p ON p.projection_name = c.projection_name AND p.projection_version = c.projection_version),
     ce AS (SELECT x.* FROM operations.late_settlement_case_exposures x
             JOIN outbox.active_projections p ON p.projection_name = x.projection_name AND p.projection_version = x.projection_version),
     ev AS (SELECT event_id, event_type FROM outbox.outbox_events
             WHERE event_type IN ('billing.late-settlement-exposure.case-requested@1', 'billing.late-settlement-command-result.committed@1',
                                  'billing.case-resolution.applied@1'))
SELECT
  (SELECT count(*) FROM e),
  (SELECT count(*) FROM e WHERE case_generation IS NOT NULL),
  (SELECT count(*) FROM g),
  (SELECT count(*) FROM g WHERE case_generation > 1),
  (SELECT count(*) FROM c),
  (SELECT count(*) FROM c WHERE state = 'open'),
  (SELECT COALESCE(sum(exposure_amount), 0)::text FROM ce),
  (SELECT count(*) FROM r),
  (SELECT COALESCE(sum(adjustment_amount), 0)::text FROM r),
  (SELECT count(*) FROM rs WHERE resolution_source = 'late_settlement_command'),
  (SELECT count(*) FROM rs WHERE resolution_source = 'settlement_transition'),
  (SELECT count(*) FROM e WHERE NOT EXISTS (SELECT 1 FROM rs WHERE rs.late_settlement_exposure_id = e.late_settlement_exposure_id)),
  -- exposures that asked for no case
  (SELECT count(*) FROM e WHERE case_generation IS NULL),
  -- Billing generations and Operations cases that are not each other's
  (SELECT count(*) FROM g WHERE NOT EXISTS (SELECT 1 FROM c WHERE c.reconciliation_case_ref = g.reconciliation_case_ref
      AND c.case_identity_ref = g.case_identity_ref AND c.case_generation = g.case_generation))
    + (SELECT count(*) FROM c WHERE NOT EXISTS (SELECT 1 FROM g WHERE g.reconciliation_case_ref = c.reconciliation_case_ref)),
  -- exposures not in their Operations case (or in another case)
  (SELECT count(*) FROM e WHERE NOT EXISTS (SELECT 1 FROM ce WHERE ce.late_settlement_exposure_id = e.late_settlement_exposure_id
      AND ce.reconciliation_case_ref = e.reconciliation_case_ref AND ce.exposure_digest = e.exposure_digest)),
  -- Billing resolutions Operations did not record on the exposure, and back
  (SELECT count(*) FROM rs WHERE NOT EXISTS (SELECT 1 FROM ce WHERE ce.late_settlement_exposure_id = rs.late_settlement_exposure_id
      AND ce.resolved_at IS NOT NULL AND ce.resolution_applied_ref = rs.applied_ref))
    + (SELECT count(*) FROM ce WHERE ce.resolved_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM rs
      WHERE rs.late_settlement_exposure_id = ce.late_settlement_exposure_id)),
  -- exactly one event per fact of each pair, and no other
  (SELECT count(*) FROM e WHERE NOT EXISTS (SELECT 1 FROM ev WHERE ev.event_id = e.case_event_id))
    + ((SELECT count(*) FROM ev WHERE event_type = 'billing.late-settlement-exposure.case-requested@1')
        - (SELECT count(*) FROM e WHERE case_event_id IS NOT NULL))
    + (SELECT count(*) FROM r WHERE NOT EXISTS (SELECT 1 FROM ev WHERE ev.event_id = r.event_id))
    + ((SELECT count(*) FROM ev WHERE event_type = 'billing.late-settlement-command-result.committed@1') - (SELECT count(*) FROM r))
    + (SELECT count(*) FROM rs WHERE NOT EXISTS (SELECT 1 FROM ev WHERE ev.event_id = rs.event_id))
    + ((SELECT count(*) FROM ev WHERE event_type = 'billing.case-resolution.applied@1') - (SELECT count(*) FROM rs)),
  (SELECT count(*) FROM outbox.outbox_deliveries d JOIN ev USING (event_id) WHERE d.status <> 'acknowledged'),
  (SELECT count(*) FROM outbox.outbox_deliveries d JOIN ev USING (event_id)),
  -- every result binds two distinct JTIs, each consumed once, and its
  -- exposure resolved by the command
  (SELECT count(*) FROM r WHERE r.grant_jti = r.funding_decision_jti
      OR NOT EXISTS (SELECT 1 FROM billing.late_consumed_grants x WHERE x.grant_jti = r.grant_jti AND x.command_operation_id = r.command_operation_id)
      OR NOT EXISTS (SELECT 1 FROM billing.late_consumed_funding_jtis x WHERE x.funding_decision_jti = r.funding_decision_jti
                       AND x.command_operation_id = r.command_operation_id)
      OR NOT EXISTS (SELECT 1 FROM rs WHERE rs.command_operation_id = r.command_operation_id
                       AND rs.late_settlement_exposure_id = r.late_settlement_exposure_id)),
  -- the three pairs, each produced
  (SELECT count(DISTINCT event_type) FROM ev);
