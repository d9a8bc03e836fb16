-- +goose Up
-- +goose StatementBegin
-- Scrape-time gauges (OBS-1, internal/execution/metrics.go) read only the
-- runs still accepting attempts, off the history of closed runs.
CREATE INDEX run_execution_states_accepting
  ON execution.run_execution_states (opened_at)
  WHERE state = 'accepting_attempts';
-- +goose StatementEnd
