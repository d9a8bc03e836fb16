-- One reservation's catch-up fences with their watermarks (inspect/admin;
-- by exact reservation id, index settlement_catch_up_fences_reservation).
SELECT f.settlement_dimension_id::text AS settlement_dimension_id, f.charge_dimension_key, f.execution_attempt_id::text AS execution_attempt_id,
       f.coordination_state, f.fence_revision, f.settlement_state_revision, f.active_work_generation,
       f.settled_amount::text AS settled_amount, f.last_evaluated_state_version,
       COALESCE(w.settlement_input_state_version, 0) AS watermark_state_version, f.updated_at
FROM billing.settlement_catch_up_fences f
LEFT JOIN billing.settlement_input_watermarks w
  ON w.billing_reservation_id = f.billing_reservation_id AND w.settlement_dimension_id = f.settlement_dimension_id
WHERE f.billing_reservation_id = @billing_reservation_id
ORDER BY f.charge_dimension_key, f.settlement_dimension_id
