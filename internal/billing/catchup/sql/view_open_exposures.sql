-- Count and sum of the open, blocked exposures (summaries and invariants):
-- recorded open and not yet resolved (by a late settlement command or a
-- later transition, billing.late_settlement_exposure_resolutions).
SELECT count(*) AS open_exposures, COALESCE(sum(exposure_amount), 0)::text AS open_exposure_amount
FROM billing.late_settlement_exposures e
WHERE exposure_state = 'open'
  AND NOT EXISTS (SELECT 1 FROM billing.late_settlement_exposure_resolutions r WHERE r.late_settlement_exposure_id = e.late_settlement_exposure_id)
