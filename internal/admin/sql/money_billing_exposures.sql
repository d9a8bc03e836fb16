-- name: MoneyBillingExposures
-- Open late settlement exposures: their count, total amount and the oldest.
-- Cost: the WHERE is the predicate of the billing line's partial index on
-- open exposures (late_settlement_exposures_open, issue 36); every
-- exposure is open while the case chain is not built, so this reads them all.
SELECT count(*) AS open,
       COALESCE(sum(exposure_amount), 0)::text AS amount,
       min(recorded_at) AS oldest_recorded_at
  FROM billing.late_settlement_exposures
 WHERE exposure_state = 'open'
