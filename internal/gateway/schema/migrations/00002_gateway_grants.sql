-- Role of the Gateway owner (least privilege): read and insert its schema,
-- update only the slot state/reply and the availability pointer (the
-- triggers allow only the legal transitions), append to the outbox as an
-- oceanway_producer.

-- +goose Up
-- +goose StatementBegin
DO $do$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'oceanway_gateway') THEN
    BEGIN
      CREATE ROLE oceanway_gateway NOLOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
      NULL; -- created concurrently by another migration
    END;
  END IF;
END
$do$;

REVOKE ALL ON SCHEMA gateway FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA gateway FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA gateway FROM PUBLIC;

GRANT USAGE ON SCHEMA gateway TO oceanway_gateway;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA gateway TO oceanway_gateway;
GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA gateway TO oceanway_gateway;
GRANT UPDATE (state, reply_body, terminal_at) ON gateway.dispatch_slots TO oceanway_gateway;
GRANT UPDATE (current_availability_ref, current_state_version) ON gateway.availability_currents TO oceanway_gateway;
GRANT oceanway_producer TO oceanway_gateway;
-- +goose StatementEnd
