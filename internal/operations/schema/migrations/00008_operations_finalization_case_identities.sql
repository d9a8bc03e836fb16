-- Finalization reconciliation case identities (issue 31, ADR-031): the
-- content-addressed FinalizationReconciliationCaseIdentityReservation@1
-- Billing reserves before its first reconciliation_required decision of a
-- case generation. A reservation allocates the stable case ref and creates
-- no visible case; the case itself comes from the case-requested event.
--
-- One identity per (fence, generation), insert-only (OP001): a lost
-- response or a Work generation that lost the fence re-reads the same row.
-- Generation N > 1 names generation N-1 of the same fence as predecessor.

-- +goose Up
-- +goose StatementBegin
CREATE TABLE operations.finalization_case_identities (
  case_identity_ref                       text        NOT NULL PRIMARY KEY,
  case_identity_schema_version            text        NOT NULL CHECK (case_identity_schema_version = '1'),
  case_identity_digest_algorithm_version  text        NOT NULL CHECK (case_identity_digest_algorithm_version = 'jcs-sha256-v1'),
  case_identity_digest                    text        NOT NULL CHECK (case_identity_digest ~ '^[0-9a-f]{64}$'),
  source_kind                             text        NOT NULL CHECK (source_kind = 'billing_finalization'),
  billing_finalization_fence_id           uuid        NOT NULL,
  reconciliation_generation               bigint      NOT NULL CHECK (reconciliation_generation >= 1),
  reconciliation_case_ref                 text        NOT NULL UNIQUE,
  case_request_operation_id               uuid        NOT NULL UNIQUE,
  predecessor_generation                  bigint,
  billing_reservation_id                  uuid        NOT NULL,
  billing_account_id                      uuid        NOT NULL,
  run_id                                  uuid        NOT NULL,
  tenant_id                               uuid        NOT NULL,
  identity_body                           text        NOT NULL,
  reserved_at                             timestamptz NOT NULL,
  UNIQUE (billing_finalization_fence_id, reconciliation_generation),
  CHECK ((reconciliation_generation = 1) = (predecessor_generation IS NULL)),
  CHECK (predecessor_generation IS NULL OR predecessor_generation = reconciliation_generation - 1),
  FOREIGN KEY (billing_finalization_fence_id, predecessor_generation)
    REFERENCES operations.finalization_case_identities (billing_finalization_fence_id, reconciliation_generation)
);
CREATE TRIGGER /* guard OP001.case-identities-insert-only */ finalization_case_identities_insert_only
  BEFORE UPDATE OR DELETE ON operations.finalization_case_identities
  FOR EACH ROW EXECUTE FUNCTION operations.reject_change();

GRANT SELECT, INSERT ON operations.finalization_case_identities TO oceanway_operations;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DROP TABLE operations.finalization_case_identities;
-- +goose StatementEnd
