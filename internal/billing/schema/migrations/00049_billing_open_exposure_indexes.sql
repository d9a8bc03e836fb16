-- The open late settlement exposures, read without the resolved history
-- (issue 32). Every exposure row stays exposure_state = 'open' (the row is
-- insert-only; its resolution is a row of late_settlement_exposure_resolutions),
-- so the partial index of 00043 no longer narrows anything. The collector
-- (sql/metrics_exposures.sql) reaches the open ones through the case
-- generations that are not resolved, then each generation's exposures, plus
-- the exposures recorded without a case (not_requested), which nothing
-- resolves.

-- +goose Up
-- +goose StatementBegin
CREATE INDEX late_settlement_cases_unresolved ON billing.late_settlement_cases (settlement_dimension_id, case_generation)
  WHERE state <> 'resolved';
CREATE INDEX late_settlement_exposures_by_case ON billing.late_settlement_exposures (settlement_dimension_id, case_generation);
CREATE INDEX late_settlement_exposures_without_case ON billing.late_settlement_exposures (recorded_at)
  WHERE case_generation IS NULL;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DROP INDEX billing.late_settlement_exposures_without_case;
DROP INDEX billing.late_settlement_exposures_by_case;
DROP INDEX billing.late_settlement_cases_unresolved;
-- +goose StatementEnd
