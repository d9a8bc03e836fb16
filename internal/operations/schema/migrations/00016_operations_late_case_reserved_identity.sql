-- A projected late settlement case is exactly an identity Operations
-- reserved (issue 32, BI-2): the projector checks the case-requested event
-- against the reservation in Go; PostgreSQL refuses too a case row whose
-- identity quadruple, case ref, generation or dimension is not one reserved
-- row's (a forged or mistyped case cannot open).

-- +goose Up
-- +goose StatementBegin
ALTER TABLE operations.late_settlement_case_identities
  ADD CONSTRAINT late_settlement_case_identities_whole
  UNIQUE (case_identity_ref, case_identity_digest, reconciliation_case_ref, case_generation, settlement_dimension_id);
ALTER TABLE operations.late_settlement_cases
  ADD CONSTRAINT late_settlement_cases_reserved_identity
  FOREIGN KEY (case_identity_ref, case_identity_digest, reconciliation_case_ref, case_generation, settlement_dimension_id)
  REFERENCES operations.late_settlement_case_identities
    (case_identity_ref, case_identity_digest, reconciliation_case_ref, case_generation, settlement_dimension_id);
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
ALTER TABLE operations.late_settlement_cases DROP CONSTRAINT late_settlement_cases_reserved_identity;
ALTER TABLE operations.late_settlement_case_identities DROP CONSTRAINT late_settlement_case_identities_whole;
-- +goose StatementEnd
