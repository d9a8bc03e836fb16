-- +goose Up
-- +goose StatementBegin
-- Scrape-time gauges (OBS-1, internal/metering/metrics.go) read only what
-- still needs attention: settlement inputs that are not settleable as they
-- stand, and provider cost lanes that are not processed. Partial indexes
-- keep those reads off the settled history. Blocked Work is read from the
-- queue of active Work (metering.pending_works), which holds only open Work.
CREATE INDEX settlement_input_snapshots_unsettleable
  ON metering.settlement_input_snapshots (settlement_dimension_id, state_version)
  WHERE reconciliation_state <> 'not_required';
CREATE INDEX cost_lane_coordination_attention
  ON metering.cost_lane_coordination (state)
  WHERE state IN ('waiting_for_evidence', 'reconciliation_required', 'blocked_on_processing_conflict');
-- +goose StatementEnd
