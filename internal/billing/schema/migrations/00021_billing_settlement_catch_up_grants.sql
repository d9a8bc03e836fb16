-- Grants of the settlement catch-up tables (00020) to the billing role
-- (least privilege; 00003 describes the role):
--
--   oceanway_billing  the catch-up consumer, the finalization's fence
--                     opening and the catch-up worker: read everything of
--                     the catch-up; insert receipts, Work, transitions and
--                     exposures (insert-only, BC001); insert and update
--                     fences (the graph guard BC003/BC004 decides which
--                     updates are legal); no DELETE anywhere.

-- +goose Up
-- +goose StatementBegin
REVOKE ALL ON billing.settlement_catch_up_receipts, billing.settlement_catch_up_works, billing.settlement_transitions,
  billing.late_settlement_exposures, billing.settlement_catch_up_fences FROM PUBLIC;
REVOKE ALL ON FUNCTION billing.catch_up_reject_change(), billing.catch_up_exposure_present(),
  billing.catch_up_fence_start(), billing.catch_up_fence_forward() FROM PUBLIC;

GRANT EXECUTE ON FUNCTION billing.catch_up_reject_change(), billing.catch_up_exposure_present(),
  billing.catch_up_fence_start(), billing.catch_up_fence_forward() TO oceanway_billing;
GRANT SELECT, INSERT ON billing.settlement_catch_up_receipts, billing.settlement_catch_up_works,
  billing.settlement_transitions, billing.late_settlement_exposures TO oceanway_billing;
GRANT SELECT, INSERT ON billing.settlement_catch_up_fences TO oceanway_billing;
GRANT UPDATE (fence_revision, settlement_state_revision, settled_amount, last_evaluated_ref, last_evaluated_schema_version,
  last_evaluated_digest_algorithm_version, last_evaluated_digest, last_evaluated_state_version, last_event_id,
  coordination_state, active_work_generation, caught_up_receipt_ref, caught_up_receipt_schema_version,
  caught_up_receipt_digest_algorithm_version, caught_up_receipt_digest, updated_at)
  ON billing.settlement_catch_up_fences TO oceanway_billing;
-- +goose StatementEnd
