-- Open late settlement exposures: how many, their amount, the oldest
-- (partial index late_settlement_exposures_open).
SELECT count(*)::float8, COALESCE(sum(exposure_amount), 0)::float8,
       COALESCE(EXTRACT(EPOCH FROM now() - min(recorded_at)), 0)::float8
  FROM billing.late_settlement_exposures
 WHERE exposure_state = 'open';
