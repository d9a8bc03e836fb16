-- Open late settlement exposures: how many, their amount, the oldest
-- (partial index late_settlement_exposures_open).
SELECT count(*)::float8, COALESCE(sum(exposure_amount), 0)::float8,
       COALESCE(EXTRACT(EPOCH FROM now() - min(recorded_at)), 0)::float8
  FROM billing.late_settlement_exposures e
 WHERE exposure_state = 'open'
   AND NOT EXISTS (SELECT 1 FROM billing.late_settlement_exposure_resolutions r WHERE r.late_settlement_exposure_id = e.late_settlement_exposure_id);
