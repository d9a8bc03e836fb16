-- Finalization reconciliation (issue 31, ADR-031 "reconciliation_required
-- 同样不是无入口/无出口状态"): the fence's entrance into
-- reconciliation_required, bound to the case identity Operations reserved.
--
-- The fence keeps its latest case (generation, ref, identity reservation
-- quadruple); finalization_reconciliation_requests holds one insert-only row
-- per case generation, written in the transaction that enters the state
-- with the decision, the Work finish and the case-requested event. BL003 no
-- longer refuses the state outright: it refuses an entrance without that
-- row, a generation that skips, and any exit (the resolution branch adds
-- the one exit, through its applied fact, in its own migration).

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
-- envelope digest are kept).
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
  decision_ref                                        text        NOT NULL UNIQUE,
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

CREATE OR REPLACE FUNCTION billing.guard_fence() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  new_generation boolean;
  entering_case boolean;
BEGIN
  IF /* guard BL001.fence-no-delete */ TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'billing: DELETE on a finalization fence is forbidden' USING ERRCODE = 'BL001';
  END IF;
  IF TG_OP = 'INSERT' THEN
    IF /* guard BL002.fence-start */ NEW.finalization_fence_revision <> 1 OR NEW.coordination_state <> 'pending_evaluation'
       OR NEW.active_work_generation IS DISTINCT FROM 1 OR NEW.latest_work_generation <> 1
       OR NEW.closure_watermark_state <> 'none' OR NEW.settlement_input_watermark_state <> 'none'
       OR NEW.committed_ref IS NOT NULL OR NEW.reconciliation_generation <> 0 THEN
      RAISE EXCEPTION 'billing: a fence starts at revision 1, pending_evaluation with generation 1 and no watermark'
        USING ERRCODE = 'BL002';
    END IF;
    RETURN NEW;
  END IF;
  IF /* guard BL002.fence-identity */ NEW.billing_finalization_fence_id <> OLD.billing_finalization_fence_id OR NEW.billing_reservation_id <> OLD.billing_reservation_id
     OR NEW.run_id <> OLD.run_id OR NEW.created_at <> OLD.created_at THEN
    RAISE EXCEPTION 'billing: a fence''s identity never changes' USING ERRCODE = 'BL002';
  END IF;
  IF /* guard BL002.fence-committed-absorbing */ OLD.coordination_state = 'committed' THEN
    RAISE EXCEPTION 'billing: fence % is committed (absorbing)', OLD.billing_finalization_fence_id USING ERRCODE = 'BL002';
  END IF;
  IF /* guard BL002.fence-revision-step */ NEW.finalization_fence_revision <> OLD.finalization_fence_revision + 1 THEN
    RAISE EXCEPTION 'billing: fence revision % → % (must be +1)', OLD.finalization_fence_revision, NEW.finalization_fence_revision
      USING ERRCODE = 'BL002';
  END IF;
  IF /* guard BL003.reconciliation-exit */ OLD.coordination_state = 'reconciliation_required' THEN
    RAISE EXCEPTION 'billing: fence % is in reconciliation case generation %: only its applied resolution reopens it',
      OLD.billing_finalization_fence_id, OLD.reconciliation_generation USING ERRCODE = 'BL003';
  END IF;
  entering_case := NEW.coordination_state = 'reconciliation_required';
  IF /* guard BL003.case-binding */ (NEW.reconciliation_generation, NEW.reconciliation_case_ref, NEW.case_identity_ref,
        NEW.case_identity_schema_version, NEW.case_identity_digest_algorithm_version, NEW.case_identity_digest)
     IS DISTINCT FROM (OLD.reconciliation_generation, OLD.reconciliation_case_ref, OLD.case_identity_ref,
        OLD.case_identity_schema_version, OLD.case_identity_digest_algorithm_version, OLD.case_identity_digest)
     AND NOT entering_case THEN
    RAISE EXCEPTION 'billing: a fence''s case binding changes only when it enters reconciliation_required' USING ERRCODE = 'BL003';
  END IF;
  IF /* guard BL003.case-request-row */ entering_case AND (NEW.reconciliation_generation <> OLD.reconciliation_generation + 1
     OR NOT EXISTS (SELECT 1 FROM billing.finalization_reconciliation_requests r
        WHERE r.billing_finalization_fence_id = NEW.billing_finalization_fence_id
          AND r.reconciliation_generation = NEW.reconciliation_generation
          AND r.reconciliation_case_ref = NEW.reconciliation_case_ref
          AND (r.case_identity_ref, r.case_identity_schema_version, r.case_identity_digest_algorithm_version, r.case_identity_digest)
            = (NEW.case_identity_ref, NEW.case_identity_schema_version, NEW.case_identity_digest_algorithm_version, NEW.case_identity_digest)
          AND r.finalization_fence_revision = NEW.finalization_fence_revision
          AND r.work_generation = OLD.active_work_generation)) THEN
    RAISE EXCEPTION 'billing: reconciliation_required needs the next case generation''s request, written with the decision'
      USING ERRCODE = 'BL003';
  END IF;
  IF /* guard BL002.fence-generation-step */ NEW.latest_work_generation NOT IN (OLD.latest_work_generation, OLD.latest_work_generation + 1) THEN
    RAISE EXCEPTION 'billing: work generation % → %', OLD.latest_work_generation, NEW.latest_work_generation USING ERRCODE = 'BL002';
  END IF;
  new_generation := NEW.latest_work_generation = OLD.latest_work_generation + 1;
  IF /* guard BL002.fence-graph */ NOT (CASE
       WHEN NEW.coordination_state = 'pending_evaluation' THEN new_generation
       WHEN NEW.coordination_state IN ('awaiting_finalization', 'reconciliation_required', 'committed')
         THEN OLD.coordination_state = 'pending_evaluation' AND NOT new_generation
       ELSE false END) THEN
    RAISE EXCEPTION 'billing: fence transition % → % (new generation: %) is not in the graph',
      OLD.coordination_state, NEW.coordination_state, new_generation USING ERRCODE = 'BL002';
  END IF;
  IF /* guard BL002.fence-watermark-backward */ (OLD.closure_watermark_state = 'applied' AND NEW.closure_watermark_state <> 'applied')
     OR (OLD.settlement_input_watermark_state = 'advanced' AND NEW.settlement_input_watermark_state <> 'advanced')
     OR ((NEW.closure_watermark_state <> OLD.closure_watermark_state
          OR NEW.settlement_input_watermark_state <> OLD.settlement_input_watermark_state) AND NOT new_generation) THEN
    RAISE EXCEPTION 'billing: a watermark moved backwards or without a new generation' USING ERRCODE = 'BL002';
  END IF;
  IF /* guard BL002.fence-closure-without-row */ NEW.closure_watermark_state = 'applied' AND OLD.closure_watermark_state = 'none'
     AND NOT EXISTS (SELECT 1 FROM billing.closure_watermarks WHERE billing_finalization_fence_id = NEW.billing_finalization_fence_id) THEN
    RAISE EXCEPTION 'billing: closure watermark applied without its closure row' USING ERRCODE = 'BL002';
  END IF;
  RETURN NEW;
END
$fn$;

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
