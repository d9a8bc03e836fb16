-- The platform API's idempotency keys for Operations' case operations
-- (issue 33): the first response to (operator principal, operation, key),
-- stored in the operation's transaction on the core database as
-- oceanway_operations, so an operator's retry after a lost answer gets it
-- byte for byte and a key reused with another body is refused. A stored
-- response never changes (OP001).

-- +goose Up
-- +goose StatementBegin
CREATE TABLE operations.api_idempotency_keys (
  caller_workload text NOT NULL CHECK (caller_workload <> ''),
  operation_id text NOT NULL CHECK (operation_id <> ''),
  idempotency_key text NOT NULL CHECK (idempotency_key ~ '^[\x21-\x7e]{1,255}$'),
  request_sha256 text NOT NULL CHECK (request_sha256 ~ '^[0-9a-f]{64}$'),
  response_status integer NOT NULL CHECK (response_status BETWEEN 200 AND 299),
  response_content_type text NOT NULL,
  response_body bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (caller_workload, operation_id, idempotency_key)
);

CREATE TRIGGER /* guard OP001.api-idempotency-insert-only */ api_idempotency_keys_insert_only
  BEFORE UPDATE OR DELETE ON operations.api_idempotency_keys
  FOR EACH ROW EXECUTE FUNCTION operations.reject_change();
CREATE TRIGGER /* guard OP001.api-idempotency-no-truncate */ api_idempotency_keys_no_truncate
  BEFORE TRUNCATE ON operations.api_idempotency_keys
  FOR EACH STATEMENT EXECUTE FUNCTION operations.reject_change();

REVOKE ALL ON operations.api_idempotency_keys FROM PUBLIC;
GRANT SELECT, INSERT ON operations.api_idempotency_keys TO oceanway_operations;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DROP TABLE operations.api_idempotency_keys;
-- +goose StatementEnd
