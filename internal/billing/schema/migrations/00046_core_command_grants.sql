-- Core's command grant issuer (issue 31, ADR-031): the
-- CommandGrantExchangeResult@1 of each actor assertion, in schema grants of
-- the core database, written only by its own role. One result per
-- exchange operation (derived from the assertion's iss + jti): a lost
-- response returns the first grant, and the assertion never buys a second
-- one. The issuer's role cannot touch Billing's tables, and Billing's role
-- cannot issue (separation of duties: Billing consumes the grant's jti).

-- +goose Up
-- +goose StatementBegin
DO $do$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'oceanway_grants') THEN
    BEGIN
      CREATE ROLE oceanway_grants NOLOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
      NULL; -- created concurrently by another migration
    END;
  END IF;
END
$do$;

CREATE SCHEMA grants;
COMMENT ON SCHEMA grants IS 'OceanWay Core command grant issuer: one exchange result per actor assertion.';

CREATE FUNCTION grants.reject_change() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  RAISE EXCEPTION 'grants: % on %.% is forbidden (insert-only fact)', TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME
    USING ERRCODE = 'GR001';
END
$fn$;

CREATE TABLE grants.command_grant_exchanges (
  command_grant_exchange_operation_id uuid        NOT NULL PRIMARY KEY,
  result_ref                          text        NOT NULL UNIQUE,
  result_schema_version               text        NOT NULL CHECK (result_schema_version = '1'),
  result_digest_algorithm_version     text        NOT NULL CHECK (result_digest_algorithm_version = 'jcs-sha256-v1'),
  result_digest                       text        NOT NULL CHECK (result_digest ~ '^[0-9a-f]{64}$'),
  actor_assertion_issuer              text        NOT NULL,
  actor_assertion_jti                 text        NOT NULL,
  actor_workforce_principal_id        text        NOT NULL,
  candidate_ref                       text        NOT NULL,
  grant_jti                           uuid        NOT NULL UNIQUE,
  grant_sha256                        text        NOT NULL UNIQUE CHECK (grant_sha256 ~ '^[0-9a-f]{64}$'),
  grant_jws                           text        NOT NULL,
  grant_expires_at                    timestamptz NOT NULL,
  result_body                         text        NOT NULL,
  exchanged_at                        timestamptz NOT NULL,
  UNIQUE (actor_assertion_issuer, actor_assertion_jti)
);
CREATE TRIGGER /* guard GR001.exchanges-immutable */ command_grant_exchanges_immutable
  BEFORE UPDATE OR DELETE ON grants.command_grant_exchanges
  FOR EACH ROW EXECUTE FUNCTION grants.reject_change();
CREATE TRIGGER /* guard GR001.exchanges-no-truncate */ command_grant_exchanges_no_truncate
  BEFORE TRUNCATE ON grants.command_grant_exchanges
  FOR EACH STATEMENT EXECUTE FUNCTION grants.reject_change();

REVOKE ALL ON SCHEMA grants FROM PUBLIC;
GRANT USAGE ON SCHEMA grants TO oceanway_grants;
GRANT SELECT, INSERT ON grants.command_grant_exchanges TO oceanway_grants;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DROP SCHEMA grants CASCADE;
-- +goose StatementEnd
