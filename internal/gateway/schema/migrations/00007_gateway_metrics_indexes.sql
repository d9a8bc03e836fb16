-- +goose Up
-- +goose StatementBegin
-- Scrape-time gauges (OBS-1, internal/gateway/metrics.go) read only the
-- dispatch slots still reserved, off the history of bound and rejected ones.
CREATE INDEX dispatch_slots_reserved
  ON gateway.dispatch_slots (reserved_at)
  WHERE state = 'reserved';
-- +goose StatementEnd
