-- Late settlement exposure cases (issue 32, ADR-031 "终局后变化采用追加式
-- Transition"): the second source scope of an Operations reconciliation
-- case. docs/operations.md ("Late settlement cases") explains the rules.
--
--   late_settlement_case_identities  LateSettlementCaseIdentityReservation@1,
--       the stable identity Billing reserves for one settlement dimension's
--       case generation before its first exposure asks for the case. One per
--       (dimension, generation), insert-only (OP001); generation N > 1 names
--       generation N-1 of the same dimension.
--   late_settlement_cases           per projection: the case of a dimension
--       generation, materialised (open) from the first verified
--       billing.late-settlement-exposure.case-requested@1 of the generation.
--   late_settlement_case_exposures  per projection: each verified exposure
--       that joined its case (an open generation collects every exposure
--       Billing records while it is opening | open). Insert-only.
--
-- The case rows are insert-only too until the late settlement command
-- (issue 32, part 2) closes them: 00015 drops these two triggers and
-- replaces them with forward-only guards (open → resolved), so their
-- clauses live there.

-- +goose Up
-- +goose StatementBegin
CREATE TABLE operations.late_settlement_case_identities (
  case_identity_ref                       text        NOT NULL PRIMARY KEY,
  case_identity_schema_version            text        NOT NULL CHECK (case_identity_schema_version = '1'),
  case_identity_digest_algorithm_version  text        NOT NULL CHECK (case_identity_digest_algorithm_version = 'jcs-sha256-v1'),
  case_identity_digest                    text        NOT NULL CHECK (case_identity_digest ~ '^[0-9a-f]{64}$'),
  source_kind                             text        NOT NULL CHECK (source_kind = 'late_settlement_exposure'),
  settlement_dimension_id                 uuid        NOT NULL,
  case_generation                         bigint      NOT NULL CHECK (case_generation >= 1),
  reconciliation_case_ref                 text        NOT NULL UNIQUE,
  case_request_operation_id               uuid        NOT NULL UNIQUE,
  predecessor_generation                  bigint,
  billing_reservation_id                  uuid        NOT NULL,
  billing_account_id                      uuid        NOT NULL,
  run_id                                  uuid        NOT NULL,
  tenant_id                               uuid        NOT NULL,
  identity_body                           text        NOT NULL,
  reserved_at                             timestamptz NOT NULL,
  UNIQUE (settlement_dimension_id, case_generation),
  CHECK ((case_generation = 1) = (predecessor_generation IS NULL)),
  CHECK (predecessor_generation IS NULL OR predecessor_generation = case_generation - 1),
  FOREIGN KEY (settlement_dimension_id, predecessor_generation)
    REFERENCES operations.late_settlement_case_identities (settlement_dimension_id, case_generation)
);
CREATE TRIGGER /* guard OP001.late-case-identities-insert-only */ late_settlement_case_identities_insert_only
  BEFORE UPDATE OR DELETE ON operations.late_settlement_case_identities
  FOR EACH ROW EXECUTE FUNCTION operations.reject_change();

CREATE TABLE operations.late_settlement_cases (
  reconciliation_case_ref                 text        NOT NULL,
  projection_name                         text        NOT NULL,
  projection_version                      bigint      NOT NULL,
  settlement_dimension_id                 uuid        NOT NULL,
  case_generation                         bigint      NOT NULL CHECK (case_generation >= 1),
  case_identity_ref                       text        NOT NULL,
  case_identity_schema_version            text        NOT NULL,
  case_identity_digest_algorithm_version  text        NOT NULL,
  case_identity_digest                    text        NOT NULL,
  case_request_operation_id               uuid        NOT NULL,
  billing_reservation_id                  uuid        NOT NULL,
  billing_account_id                      uuid        NOT NULL,
  run_id                                  uuid        NOT NULL,
  run_step_id                             uuid        NOT NULL,
  execution_attempt_id                    uuid        NOT NULL,
  charge_dimension_key                    text        NOT NULL,
  tenant_kind                             text        NOT NULL,
  tenant_id                               uuid        NOT NULL,
  workspace_id                            uuid        NOT NULL,
  project_id                              uuid,
  state                                   text        NOT NULL CHECK (state IN ('open', 'resolved')),
  opened_by_event_id                      uuid        NOT NULL,
  opened_at                               timestamptz NOT NULL,
  PRIMARY KEY (reconciliation_case_ref, projection_name, projection_version),
  UNIQUE (settlement_dimension_id, case_generation, projection_name, projection_version)
);
CREATE TRIGGER late_settlement_cases_insert_only
  BEFORE UPDATE OR DELETE ON operations.late_settlement_cases
  FOR EACH ROW EXECUTE FUNCTION operations.reject_change();

CREATE TABLE operations.late_settlement_case_exposures (
  late_settlement_exposure_id             uuid        NOT NULL,
  projection_name                         text        NOT NULL,
  projection_version                      bigint      NOT NULL,
  reconciliation_case_ref                 text        NOT NULL,
  exposure_ref                            text        NOT NULL,
  exposure_schema_version                 text        NOT NULL,
  exposure_digest_algorithm_version       text        NOT NULL,
  exposure_digest                         text        NOT NULL,
  exposure_amount                         numeric     NOT NULL CHECK (exposure_amount > 0),
  request_event_id                        uuid        NOT NULL,
  request_event_envelope_sha256           text        NOT NULL CHECK (request_event_envelope_sha256 ~ '^[0-9a-f]{64}$'),
  requested_at                            timestamptz NOT NULL,
  PRIMARY KEY (late_settlement_exposure_id, projection_name, projection_version),
  FOREIGN KEY (reconciliation_case_ref, projection_name, projection_version)
    REFERENCES operations.late_settlement_cases (reconciliation_case_ref, projection_name, projection_version)
);
CREATE INDEX late_settlement_case_exposures_by_case ON operations.late_settlement_case_exposures
  (reconciliation_case_ref, projection_name, projection_version);
CREATE TRIGGER late_settlement_case_exposures_insert_only
  BEFORE UPDATE OR DELETE ON operations.late_settlement_case_exposures
  FOR EACH ROW EXECUTE FUNCTION operations.reject_change();

-- Shadow fence (00003): a shadow build writes only under its claim token.
CREATE TRIGGER late_settlement_cases_shadow_fence BEFORE INSERT ON operations.late_settlement_cases
  FOR EACH ROW EXECUTE FUNCTION operations.shadow_fence('opened_by_event_id');
CREATE TRIGGER late_settlement_case_exposures_shadow_fence BEFORE INSERT ON operations.late_settlement_case_exposures
  FOR EACH ROW EXECUTE FUNCTION operations.shadow_fence('request_event_id');

ALTER TABLE operations.projected_events DROP CONSTRAINT projected_events_projection_effect_check;
ALTER TABLE operations.projected_events ADD CONSTRAINT projected_events_projection_effect_check CHECK (projection_effect IN (
  'operation_created', 'operation_created_reservation_linked',
  'reservation_linked', 'reservation_pending_unlinked',
  'reservation_finalized', 'pending_reservation_finalized',
  'settlement_transition_recorded',
  'finalization_case_opened', 'finalization_case_materialized_resolved', 'finalization_case_successor_pending',
  'finalization_case_resolved', 'finalization_case_resolution_pending',
  'late_settlement_case_opened', 'late_settlement_case_joined'));

REVOKE ALL ON operations.late_settlement_case_identities, operations.late_settlement_cases,
  operations.late_settlement_case_exposures FROM PUBLIC;
GRANT SELECT, INSERT ON operations.late_settlement_case_identities, operations.late_settlement_cases,
  operations.late_settlement_case_exposures TO oceanway_operations;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
ALTER TABLE operations.projected_events DROP CONSTRAINT projected_events_projection_effect_check;
ALTER TABLE operations.projected_events ADD CONSTRAINT projected_events_projection_effect_check CHECK (projection_effect IN (
  'operation_created', 'operation_created_reservation_linked',
  'reservation_linked', 'reservation_pending_unlinked',
  'reservation_finalized', 'pending_reservation_finalized',
  'settlement_transition_recorded',
  'finalization_case_opened', 'finalization_case_materialized_resolved', 'finalization_case_successor_pending',
  'finalization_case_resolved', 'finalization_case_resolution_pending'));
DROP TABLE operations.late_settlement_case_exposures;
DROP TABLE operations.late_settlement_cases;
DROP TABLE operations.late_settlement_case_identities;
-- +goose StatementEnd
