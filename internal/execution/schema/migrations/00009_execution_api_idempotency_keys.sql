-- The platform API's idempotency keys for the Execution owner's operations
-- (issue 33): the first response to (caller, operation, key), stored in the
-- transaction that committed the operation's facts, in the Execution owner's
-- own database, so the API stays per owner when the owners run apart. A
-- stored response never changes (EX001, like every execution fact).

-- +goose Up
-- +goose StatementBegin
CREATE TABLE execution.api_idempotency_keys (
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

CREATE TRIGGER /* guard EX001.api-idempotency-immutable */ api_idempotency_keys_immutable
  BEFORE UPDATE OR DELETE ON execution.api_idempotency_keys
  FOR EACH ROW EXECUTE FUNCTION execution.reject_change();
CREATE TRIGGER /* guard EX001.api-idempotency-no-truncate */ api_idempotency_keys_no_truncate
  BEFORE TRUNCATE ON execution.api_idempotency_keys
  FOR EACH STATEMENT EXECUTE FUNCTION execution.reject_change();

REVOKE ALL ON execution.api_idempotency_keys FROM PUBLIC;
GRANT SELECT, INSERT ON execution.api_idempotency_keys TO oceanway_execution;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DROP TABLE execution.api_idempotency_keys;
-- +goose StatementEnd
