-- name: MoneyBillingExposureList
-- The open late settlement exposures, oldest first, at most @row_limit (the
-- caller asks one more than it shows to say "N more"). The run id and the
-- charge dimension come from the stored exposure body. The WHERE and the
-- ORDER BY follow the partial index late_settlement_exposures_open
-- (recorded_at) WHERE exposure_state = 'open'.
SELECT e.late_settlement_exposure_id::text AS exposure_id, e.exposure_ref, e.billing_reservation_id::text AS reservation_id,
       e.exposure_amount::text AS amount, e.automatic_charge, e.recorded_at,
       (e.exposure_body::jsonb ->> 'runId') AS run_id,
       (e.exposure_body::jsonb ->> 'chargeDimensionKey') AS charge_dimension_key
  FROM billing.late_settlement_exposures e
 WHERE e.exposure_state = 'open'
 ORDER BY e.recorded_at, e.late_settlement_exposure_id
 LIMIT @row_limit
