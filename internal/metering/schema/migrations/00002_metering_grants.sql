-- Role of the Metering input processor (least privilege):
--
--   oceanway_metering  the inbox transactions: read/insert receipts and
--                      works (insert-only, trigger ME001), read/insert/update
--                      fences, watermarks and cost lanes (forward-only,
--                      trigger ME002); no DELETE anywhere.

-- +goose Up
-- +goose StatementBegin
DO $do$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'oceanway_metering') THEN
    BEGIN
      CREATE ROLE oceanway_metering NOLOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
      NULL; -- created concurrently by another migration
    END;
  END IF;
END
$do$;

REVOKE ALL ON SCHEMA metering FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA metering FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA metering FROM PUBLIC;

GRANT USAGE ON SCHEMA metering TO oceanway_metering;
GRANT EXECUTE ON FUNCTION metering.reject_change(), metering.forward_only() TO oceanway_metering;
GRANT SELECT, INSERT ON metering.input_receipts, metering.input_works TO oceanway_metering;
GRANT SELECT, INSERT, UPDATE ON metering.input_fences, metering.usage_watermarks, metering.cost_lanes TO oceanway_metering;
-- +goose StatementEnd
