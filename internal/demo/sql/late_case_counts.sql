-- name: LateCaseCounts
-- The late settlement exposure cases' end state and their invariants in
-- one snapshot (issue 32): Billing's exposures and the case generations
-- they asked for, Operations' cases and case exposures (active projection),
-- and the case-requested pair's events and deliveries.
WITH e AS (SELECT * FROM billing.late_settlement_exposures),
     g AS (SELECT * FROM billing.late_settlement_cases),
     c AS (SELECT c.* FROM operations.late_settlement_cases c
             JOIN outbox.active_projections p ON p.projection_name = c.projection_name AND p.projection_version = c.projection_version),
     ce AS (SELECT x.* FROM operations.late_settlement_case_exposures x
             JOIN outbox.active_projections p ON p.projection_name = x.projection_name AND p.projection_version = x.projection_version),
     ev AS (SELECT event_id FROM outbox.outbox_events WHERE event_type = 'billing.late-settlement-exposure.case-requested@1')
SELECT
  (SELECT count(*) FROM e),
  (SELECT count(*) FROM e WHERE case_generation IS NOT NULL),
  (SELECT count(*) FROM g),
  (SELECT count(*) FROM g WHERE case_generation > 1),
  (SELECT count(*) FROM c),
  (SELECT count(*) FROM c WHERE state = 'open'),
  (SELECT COALESCE(sum(exposure_amount), 0)::text FROM ce),
  -- exposures that asked for no case
  (SELECT count(*) FROM e WHERE case_generation IS NULL),
  -- Billing generations and Operations cases that are not each other's
  (SELECT count(*) FROM g WHERE NOT EXISTS (SELECT 1 FROM c WHERE c.reconciliation_case_ref = g.reconciliation_case_ref
      AND c.case_identity_ref = g.case_identity_ref AND c.case_generation = g.case_generation))
    + (SELECT count(*) FROM c WHERE NOT EXISTS (SELECT 1 FROM g WHERE g.reconciliation_case_ref = c.reconciliation_case_ref)),
  -- exposures not in their Operations case (or in another case)
  (SELECT count(*) FROM e WHERE NOT EXISTS (SELECT 1 FROM ce WHERE ce.late_settlement_exposure_id = e.late_settlement_exposure_id
      AND ce.reconciliation_case_ref = e.reconciliation_case_ref AND ce.exposure_digest = e.exposure_digest)),
  -- exactly one case-requested event per exposure, and no other
  (SELECT count(*) FROM e WHERE NOT EXISTS (SELECT 1 FROM ev WHERE ev.event_id = e.case_event_id))
    + ((SELECT count(*) FROM ev) - (SELECT count(*) FROM e WHERE case_event_id IS NOT NULL)),
  (SELECT count(*) FROM outbox.outbox_deliveries d JOIN ev USING (event_id) WHERE d.status <> 'acknowledged'),
  (SELECT count(*) FROM outbox.outbox_deliveries d JOIN ev USING (event_id));
