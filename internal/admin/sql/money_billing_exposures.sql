-- name: MoneyBillingExposures
-- Open late settlement exposures: their count, total amount and the oldest.
-- Cost: a scan of billing.late_settlement_exposures (no index on
-- exposure_state; every exposure is open while the case chain is not built).
SELECT count(*) AS open,
       COALESCE(sum(exposure_amount), 0)::text AS amount,
       min(recorded_at) AS oldest_recorded_at
  FROM billing.late_settlement_exposures
 WHERE exposure_state = 'open'
