-- +goose Up
-- +goose StatementBegin
-- Scrape-time gauges (OBS-1, internal/billing/metrics.go) read only what is
-- still open: fences not yet committed, catch-up fences not caught up, open
-- late exposures. Partial indexes keep those reads off the committed
-- history, so a scrape costs the open items, not the rows ever written.
CREATE INDEX billing_finalization_fences_unfinished
  ON billing.billing_finalization_fences (coordination_state, waiting_reason, updated_at)
  WHERE coordination_state <> 'committed';
CREATE INDEX settlement_catch_up_fences_unsettled
  ON billing.settlement_catch_up_fences (coordination_state, updated_at)
  WHERE coordination_state <> 'caught_up';
CREATE INDEX late_settlement_exposures_open
  ON billing.late_settlement_exposures (recorded_at)
  WHERE exposure_state = 'open';
-- +goose StatementEnd
