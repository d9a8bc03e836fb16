-- Finalization reconciliation (issue 31, ADR-031 "reconciliation_required
-- 同样不是无入口/无出口状态"): the fence's entrance into
-- reconciliation_required, bound to the case identity Operations reserved.
--
-- The fence keeps its latest case (generation, ref, identity reservation
-- quadruple); finalization_reconciliation_requests holds one insert-only row
-- per case generation, written in the transaction that enters the state
-- with the decision, the Work finish and the case-requested event. The
-- fence's guard (billing.guard_fence, redefined in 00045 with the exit)
-- refuses an entrance without that row and a generation that skips (BL003).

-- +goose Up
-- +goose StatementBegin
ALTER TABLE billing.billing_finalization_fences
  ADD COLUMN reconciliation_generation bigint NOT NULL DEFAULT 0 CHECK (reconciliation_generation >= 0),
  ADD COLUMN reconciliation_case_ref text,
  ADD COLUMN case_identity_ref text,
  ADD COLUMN case_identity_schema_version text,
  ADD COLUMN case_identity_digest_algorithm_version text,
  ADD COLUMN case_identity_digest text,
  ADD CONSTRAINT fence_case_binding CHECK (
    num_nulls(reconciliation_case_ref, case_identity_ref, case_identity_schema_version,
              case_identity_digest_algorithm_version, case_identity_digest) IN (0, 5)
    AND (reconciliation_generation = 0) = (reconciliation_case_ref IS NULL)),
  ADD CONSTRAINT fence_case_state CHECK (coordination_state <> 'reconciliation_required' OR reconciliation_case_ref IS NOT NULL);

ALTER TABLE billing.finalization_evaluations
  DROP CONSTRAINT finalization_evaluations_outcome_check,
  ADD CONSTRAINT finalization_evaluations_outcome_check
    CHECK (outcome IN ('blocked', 'reconciliation_deferred', 'reconciliation_required'));

-- One per case generation: the decision that entered reconciliation_required
-- and the case it asked Operations to create (the payload of
-- billing.finalization-reconciliation.case-requested@1, whose event id and
-- envelope digest are kept). The decision is content-addressed: a
-- re-evaluation over the same inputs makes the same decision again, so two
-- generations may name one decision.
CREATE TABLE billing.finalization_reconciliation_requests (
  billing_finalization_fence_id                       uuid        NOT NULL REFERENCES billing.billing_finalization_fences,
  reconciliation_generation                           bigint      NOT NULL CHECK (reconciliation_generation >= 1),
  reconciliation_case_ref                             text        NOT NULL UNIQUE,
  case_request_operation_id                           uuid        NOT NULL UNIQUE,
  case_identity_ref                                   text        NOT NULL UNIQUE,
  case_identity_schema_version                        text        NOT NULL CHECK (case_identity_schema_version = '1'),
  case_identity_digest_algorithm_version              text        NOT NULL CHECK (case_identity_digest_algorithm_version = 'jcs-sha256-v1'),
  case_identity_digest                                text        NOT NULL CHECK (case_identity_digest ~ '^[0-9a-f]{64}$'),
  predecessor_generation                              bigint,
  billing_reservation_id                              uuid        NOT NULL,
  run_id                                              uuid        NOT NULL,
  finalization_fence_revision                         bigint      NOT NULL CHECK (finalization_fence_revision >= 2),
  work_generation                                     bigint      NOT NULL,
  billing_finalization_operation_id                   uuid        NOT NULL,
  decision_ref                                        text        NOT NULL,
  decision_schema_version                             text        NOT NULL,
  decision_digest_algorithm_version                   text        NOT NULL,
  decision_digest                                     text        NOT NULL CHECK (decision_digest ~ '^[0-9a-f]{64}$'),
  reason_code                                         text        NOT NULL CHECK (reason_code ~ '^[a-z][a-z0-9_]{0,63}$'),
  event_id                                            uuid        NOT NULL UNIQUE,
  event_envelope_sha256                               text        NOT NULL CHECK (event_envelope_sha256 ~ '^[0-9a-f]{64}$'),
  requested_at                                        timestamptz NOT NULL,
  PRIMARY KEY (billing_finalization_fence_id, reconciliation_generation),
  FOREIGN KEY (billing_finalization_fence_id, work_generation) REFERENCES billing.billing_finalization_works,
  -- The first case has no predecessor; case N follows case N-1 of the same fence.
  CHECK ((reconciliation_generation = 1) = (predecessor_generation IS NULL)),
  CHECK (predecessor_generation IS NULL OR predecessor_generation = reconciliation_generation - 1),
  FOREIGN KEY (billing_finalization_fence_id, predecessor_generation)
    REFERENCES billing.finalization_reconciliation_requests (billing_finalization_fence_id, reconciliation_generation)
);
CREATE TRIGGER /* guard BL001.reconciliation-requests-immutable */ finalization_reconciliation_requests_immutable
  BEFORE UPDATE OR DELETE ON billing.finalization_reconciliation_requests
  FOR EACH ROW EXECUTE FUNCTION billing.reject_change();
CREATE TRIGGER /* guard BL001.reconciliation-requests-no-truncate */ finalization_reconciliation_requests_no_truncate
  BEFORE TRUNCATE ON billing.finalization_reconciliation_requests
  FOR EACH STATEMENT EXECUTE FUNCTION billing.reject_change();

-- oceanway_billing writes the requests and the fence's case binding; the
-- rest of its grants are unchanged (00003).
GRANT SELECT, INSERT ON billing.finalization_reconciliation_requests TO oceanway_billing;
GRANT UPDATE (reconciliation_generation, reconciliation_case_ref, case_identity_ref, case_identity_schema_version,
  case_identity_digest_algorithm_version, case_identity_digest) ON billing.billing_finalization_fences TO oceanway_billing;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
SELECT 1; -- forward-only: a fence's case history is a fact
-- +goose StatementEnd
