-- Role of the Core admission producer (least privilege): insert and read its
-- own schema, and append to the outbox as an oceanway_producer.

-- +goose Up
-- +goose StatementBegin
DO $do$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'oceanway_admission') THEN
    BEGIN
      CREATE ROLE oceanway_admission NOLOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
      NULL; -- created concurrently by another migration
    END;
  END IF;
END
$do$;

REVOKE ALL ON SCHEMA admission FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA admission FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA admission FROM PUBLIC;

GRANT USAGE ON SCHEMA admission TO oceanway_admission;
GRANT EXECUTE ON FUNCTION admission.reject_change() TO oceanway_admission;
GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA admission TO oceanway_admission;
GRANT oceanway_producer TO oceanway_admission;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
SELECT 1; -- grants go with the schema (00001 down); the role is cluster-wide and stays
-- +goose StatementEnd
