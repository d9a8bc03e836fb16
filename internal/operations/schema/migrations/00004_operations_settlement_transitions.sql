-- Issue 16 item 5: the projector applies billing.settlement-transition.committed@1
-- (verified through Billing's readBillingSettlementTransition) and records it in
-- the mutation log with its own effect. The dimension's aggregate
-- (billing_settlement_dimension, revision = from settlement state revision)
-- keeps every dimension's transitions contiguous and gapless (OPS-2).

-- +goose Up
-- +goose StatementBegin
ALTER TABLE operations.projected_events DROP CONSTRAINT projected_events_projection_effect_check;
ALTER TABLE operations.projected_events ADD CONSTRAINT projected_events_projection_effect_check CHECK (projection_effect IN (
  'operation_created', 'operation_created_reservation_linked',
  'reservation_linked', 'reservation_pending_unlinked',
  'reservation_finalized', 'pending_reservation_finalized',
  'settlement_transition_recorded'));
-- +goose StatementEnd
