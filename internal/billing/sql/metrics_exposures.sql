-- Open late settlement exposures: how many, their amount, the oldest. Only
-- the open items are read: the case generations not resolved (partial index
-- late_settlement_cases_unresolved) and their exposures without a
-- resolution, plus the exposures recorded without a case
-- (late_settlement_exposures_without_case), never the resolved history.
WITH open AS (
  SELECT e.exposure_amount, e.recorded_at
    FROM billing.late_settlement_cases c
    JOIN billing.late_settlement_exposures e
      ON e.settlement_dimension_id = c.settlement_dimension_id AND e.case_generation = c.case_generation
   WHERE c.state <> 'resolved'
     AND NOT EXISTS (SELECT 1 FROM billing.late_settlement_exposure_resolutions r
                      WHERE r.late_settlement_exposure_id = e.late_settlement_exposure_id)
  UNION ALL
  SELECT e.exposure_amount, e.recorded_at
    FROM billing.late_settlement_exposures e
   WHERE e.case_generation IS NULL
)
SELECT count(*)::float8, COALESCE(sum(exposure_amount), 0)::float8,
       COALESCE(EXTRACT(EPOCH FROM now() - min(recorded_at)), 0)::float8
  FROM open;
