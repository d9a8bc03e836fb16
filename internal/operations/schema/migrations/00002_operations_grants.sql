-- Role of the Operations projector and verifier (least privilege).
--
--   oceanway_operations  the projector (inbox transactions), the directed
--                        receipt read, the read-model queries and the
--                        completeness verifier: read/write its own schema,
--                        read the outbox-owned read views the completeness
--                        proof and the directed read compare with (the same
--                        fact boundary, DESIGN.md §2; outbox migration 00090),
--                        never the outbox tables, nothing else.
--
-- Receipts, projected events and proofs are insert-only (trigger OP001);
-- the grants do not give UPDATE or DELETE on them either.

-- +goose Up
-- +goose StatementBegin
DO $do$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'oceanway_operations') THEN
    BEGIN
      CREATE ROLE oceanway_operations NOLOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
      NULL; -- created concurrently by another migration
    END;
  END IF;
END
$do$;

REVOKE ALL ON SCHEMA operations FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA operations FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA operations FROM PUBLIC;

GRANT USAGE ON SCHEMA operations TO oceanway_operations;
GRANT EXECUTE ON FUNCTION operations.reject_change() TO oceanway_operations;
GRANT SELECT, INSERT ON operations.applied_receipts, operations.projected_events,
  operations.completeness_proofs TO oceanway_operations;
GRANT SELECT, INSERT, UPDATE ON operations.projection_aggregates, operations.operation_summaries,
  operations.pending_unlinked_reservations, operations.revision_gaps, operations.unsupported_events,
  operations.projection_builds TO oceanway_operations;
GRANT SELECT, INSERT ON operations.identifier_index TO oceanway_operations;

GRANT USAGE ON SCHEMA outbox TO oceanway_operations;
GRANT SELECT ON outbox.delivery_facts, outbox.event_frozen_members, outbox.active_projections
  TO oceanway_operations;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
SELECT 1; -- grants go with the schema (00001 down); the role is cluster-wide and stays
-- +goose StatementEnd
