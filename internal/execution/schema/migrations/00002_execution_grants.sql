-- Role of the Execution owner (least privilege): read and insert its own
-- schema, update only the run state (the closure CAS; the trigger allows
-- only accepting_attempts → attempts_closed), and append to the outbox as
-- an oceanway_producer.

-- +goose Up
-- +goose StatementBegin
DO $do$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'oceanway_execution') THEN
    BEGIN
      CREATE ROLE oceanway_execution NOLOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
      NULL; -- created concurrently by another migration
    END;
  END IF;
END
$do$;

REVOKE ALL ON SCHEMA execution FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA execution FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA execution FROM PUBLIC;

GRANT USAGE ON SCHEMA execution TO oceanway_execution;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA execution TO oceanway_execution;
GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA execution TO oceanway_execution;
GRANT UPDATE (state, state_version, closed_at) ON execution.run_execution_states TO oceanway_execution;
GRANT oceanway_producer TO oceanway_execution;
-- +goose StatementEnd
