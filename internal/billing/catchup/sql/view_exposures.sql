-- One reservation's late settlement exposures (open and blocked).
SELECT late_settlement_exposure_id::text AS late_settlement_exposure_id, settlement_dimension_id::text AS settlement_dimension_id,
       settlement_state_revision, exposure_amount::text AS exposure_amount, exposure_state, automatic_charge, exposure_ref, recorded_at
FROM billing.late_settlement_exposures
WHERE billing_reservation_id = @billing_reservation_id
ORDER BY settlement_dimension_id, settlement_state_revision
