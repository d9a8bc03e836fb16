-- A refund transition (BillingSettlementTransition@1, 00020) posts one
-- balanced group to its reservation's ledger: group kind
-- settlement_transition, one per transition (its id derives from the
-- transition ref), never limited to one per reservation like the hold and
-- the finalization. The ledger's own guards (balanced at commit, no negative
-- balance, lines on the reservation's economic identity; BL004) apply.

-- +goose Up
-- +goose StatementBegin
ALTER TABLE billing.ledger_posting_groups DROP CONSTRAINT ledger_posting_groups_group_kind_check;
ALTER TABLE billing.ledger_posting_groups ADD CONSTRAINT ledger_posting_groups_group_kind_check
  CHECK (group_kind IN ('reservation_hold', 'finalization', 'settlement_transition'));
-- +goose StatementEnd
