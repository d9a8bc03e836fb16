-- Roles (least privilege):
--
--   oceanway_billing    the coordinator consumer and the finalization
--                       commit: read billing and the admission rows it
--                       finalizes; insert facts, receipts, postings; update
--                       only the state columns of fences, Work, reservation
--                       states and watermarks (the guards of 00002 decide
--                       which updates are legal); no DELETE anywhere; an
--                       outbox producer.
--   oceanway_admission  opens a reservation's billing rows in the admission
--                       transaction (billing.OpenFinalizationTx): insert
--                       only.

-- +goose Up
-- +goose StatementBegin
DO $do$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'oceanway_billing') THEN
    BEGIN
      CREATE ROLE oceanway_billing NOLOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
      NULL; -- created concurrently by another migration
    END;
  END IF;
END
$do$;

REVOKE ALL ON SCHEMA billing FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA billing FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA billing FROM PUBLIC;
-- The moved tables keep admission's old grants; billing decides them now.
REVOKE ALL ON billing.billing_finalization_fences, billing.billing_finalization_trigger_snapshots,
  billing.billing_finalization_works FROM oceanway_admission;

GRANT USAGE ON SCHEMA billing TO oceanway_billing, oceanway_admission;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA billing TO oceanway_billing, oceanway_admission;

GRANT SELECT ON ALL TABLES IN SCHEMA billing TO oceanway_billing;
GRANT INSERT ON billing.billing_finalization_trigger_snapshots, billing.billing_finalization_works,
  billing.closure_watermarks, billing.settlement_input_watermarks, billing.ledger_posting_groups, billing.ledger_postings,
  billing.finalization_evaluations, billing.finalization_committed, billing.coordinator_receipts TO oceanway_billing;
GRANT UPDATE (finalization_fence_revision, coordination_state, active_work_generation, latest_work_generation,
  closure_watermark_state, settlement_input_watermark_state, waiting_reason, committed_ref, updated_at)
  ON billing.billing_finalization_fences TO oceanway_billing;
GRANT UPDATE (work_state, waiting_reason, finished_at) ON billing.billing_finalization_works TO oceanway_billing;
GRANT UPDATE (state, settled_amount, released_amount, committed_ref, finalized_at) ON billing.reservation_states TO oceanway_billing;
GRANT UPDATE (settlement_input_snapshot_ref, settlement_input_snapshot_schema_version, settlement_input_snapshot_digest_algorithm_version,
  settlement_input_snapshot_digest, settlement_input_state_version, last_event_id, inbox_revision, updated_at)
  ON billing.settlement_input_watermarks TO oceanway_billing;
GRANT USAGE ON SCHEMA admission TO oceanway_billing;
GRANT SELECT ON admission.runs, admission.reservations TO oceanway_billing;
GRANT oceanway_producer TO oceanway_billing;

GRANT SELECT, INSERT ON billing.billing_finalization_fences, billing.billing_finalization_trigger_snapshots,
  billing.billing_finalization_works, billing.reservation_states, billing.ledger_posting_groups, billing.ledger_postings
  TO oceanway_admission;
-- +goose StatementEnd
