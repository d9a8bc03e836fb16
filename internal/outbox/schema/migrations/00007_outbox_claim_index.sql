-- Claim as an ordered index scan that stops at LIMIT (OB-CLAIM-1): one
-- range per destination on (destination, available_at, created_at,
-- event_id) over pending rows only; the dispatcher walks its destinations
-- with a LATERAL join and merges. The destination-less index it replaces
-- made the planner bitmap-scan and sort the whole pending backlog per claim.
-- The queue tables churn fast: analyze and vacuum them at 2 % change, not
-- the default 10-20 %, so plans see current statistics.

-- +goose Up
-- +goose StatementBegin
DROP INDEX outbox.outbox_deliveries_claim_pending;
CREATE INDEX outbox_deliveries_claim_pending ON outbox.outbox_deliveries (destination, available_at, created_at, event_id)
  WHERE status = 'pending';
ALTER TABLE outbox.outbox_deliveries SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);
ALTER TABLE outbox.outbox_delivery_attempt_starts SET (autovacuum_analyze_scale_factor = 0.02);
ALTER TABLE outbox.outbox_delivery_attempt_finishes SET (autovacuum_analyze_scale_factor = 0.02);
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DROP INDEX outbox.outbox_deliveries_claim_pending;
CREATE INDEX outbox_deliveries_claim_pending ON outbox.outbox_deliveries (available_at, created_at, event_id)
  WHERE status = 'pending';
ALTER TABLE outbox.outbox_deliveries RESET (autovacuum_vacuum_scale_factor, autovacuum_analyze_scale_factor);
ALTER TABLE outbox.outbox_delivery_attempt_starts RESET (autovacuum_analyze_scale_factor);
ALTER TABLE outbox.outbox_delivery_attempt_finishes RESET (autovacuum_analyze_scale_factor);
-- +goose StatementEnd
