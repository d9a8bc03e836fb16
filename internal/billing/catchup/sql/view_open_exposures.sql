-- Count and sum of the open, blocked exposures (summaries and invariants).
SELECT count(*) AS open_exposures, COALESCE(sum(exposure_amount), 0)::text AS open_exposure_amount
FROM billing.late_settlement_exposures
WHERE exposure_state = 'open'
