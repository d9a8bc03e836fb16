-- +goose Up
-- +goose StatementBegin
-- Scrape-time gauges (OBS-1, internal/gateway/metrics.go) read only the
-- availability snapshots that are not `available` (provider evidence
-- pending, not reported, unavailable or conflicting), off the history of
-- available evidence, then the chain's Current pointer by key.
CREATE INDEX availability_snapshots_not_available
  ON gateway.availability_snapshots (chain_id, state_version)
  WHERE availability_state <> 'available';
-- +goose StatementEnd
