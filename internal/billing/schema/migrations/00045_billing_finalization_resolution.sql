-- The exit of reconciliation_required (issue 31, ADR-031): Billing's
-- FinalizationReconciliationResolutionApplied@1 (one per case generation,
-- written with the grant's consumed jti and
-- billing.finalization-reconciliation-resolution.applied@1), and the
-- coordinator's resolution watermark, which reopens evaluation with a new
-- Work generation. The fence leaves a case generation only to
-- pending_evaluation, only through that watermark (BL003).

-- +goose Up
-- +goose StatementBegin
-- A grant's jti is consumed once, in the transaction that applies it.
CREATE TABLE billing.consumed_command_grants (
  grant_jti      uuid        NOT NULL PRIMARY KEY,
  grant_sha256   text        NOT NULL UNIQUE CHECK (grant_sha256 ~ '^[0-9a-f]{64}$'),
  grant_audience text        NOT NULL CHECK (grant_audience = 'billing_finalization_reconciliation_resolution_command'),
  consumed_at    timestamptz NOT NULL
);
CREATE TRIGGER /* guard BL001.consumed-grants-immutable */ consumed_command_grants_immutable
  BEFORE UPDATE OR DELETE ON billing.consumed_command_grants
  FOR EACH ROW EXECUTE FUNCTION billing.reject_change();
CREATE TRIGGER /* guard BL001.consumed-grants-no-truncate */ consumed_command_grants_no_truncate
  BEFORE TRUNCATE ON billing.consumed_command_grants
  FOR EACH STATEMENT EXECUTE FUNCTION billing.reject_change();

-- FinalizationReconciliationResolutionApplied@1: one per case generation,
-- bound to that generation's request and to the consumed grant.
CREATE TABLE billing.finalization_reconciliation_resolutions (
  billing_finalization_fence_id      uuid        NOT NULL,
  reconciliation_generation          bigint      NOT NULL,
  resolution_operation_id            uuid        NOT NULL UNIQUE,
  applied_ref                        text        NOT NULL UNIQUE,
  applied_schema_version             text        NOT NULL CHECK (applied_schema_version = '1'),
  applied_digest_algorithm_version   text        NOT NULL CHECK (applied_digest_algorithm_version = 'jcs-sha256-v1'),
  applied_digest                     text        NOT NULL CHECK (applied_digest ~ '^[0-9a-f]{64}$'),
  actor_workforce_principal_id       text        NOT NULL,
  grant_jti                          uuid        NOT NULL UNIQUE REFERENCES billing.consumed_command_grants,
  finalization_fence_revision        bigint      NOT NULL,
  event_id                           uuid        NOT NULL UNIQUE,
  event_envelope_sha256              text        NOT NULL CHECK (event_envelope_sha256 ~ '^[0-9a-f]{64}$'),
  applied_body                       text        NOT NULL,
  applied_at                         timestamptz NOT NULL,
  PRIMARY KEY (billing_finalization_fence_id, reconciliation_generation),
  FOREIGN KEY (billing_finalization_fence_id, reconciliation_generation) REFERENCES billing.finalization_reconciliation_requests
);
CREATE TRIGGER /* guard BL001.resolutions-immutable */ finalization_reconciliation_resolutions_immutable
  BEFORE UPDATE OR DELETE ON billing.finalization_reconciliation_resolutions
  FOR EACH ROW EXECUTE FUNCTION billing.reject_change();
CREATE TRIGGER /* guard BL001.resolutions-no-truncate */ finalization_reconciliation_resolutions_no_truncate
  BEFORE TRUNCATE ON billing.finalization_reconciliation_resolutions
  FOR EACH STATEMENT EXECUTE FUNCTION billing.reject_change();

-- The resolution is applied while its fence is in that case generation.
CREATE FUNCTION billing.guard_resolution() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF /* guard BL003.resolution-current-case */ NOT EXISTS (SELECT 1 FROM billing.billing_finalization_fences f
      WHERE f.billing_finalization_fence_id = NEW.billing_finalization_fence_id
        AND f.coordination_state = 'reconciliation_required'
        AND f.reconciliation_generation = NEW.reconciliation_generation
        AND f.finalization_fence_revision = NEW.finalization_fence_revision) THEN
    RAISE EXCEPTION 'billing: a resolution applies to its fence''s current case generation at its revision'
      USING ERRCODE = 'BL003';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER finalization_reconciliation_resolutions_guard BEFORE INSERT ON billing.finalization_reconciliation_resolutions
  FOR EACH ROW EXECUTE FUNCTION billing.guard_resolution();

-- The coordinator's resolution watermark: the applied event it consumed,
-- its receipt and the Work generation it scheduled (insert-only, one per
-- case generation).
CREATE TABLE billing.resolution_watermarks (
  billing_finalization_fence_id                  uuid        NOT NULL,
  reconciliation_generation                      bigint      NOT NULL,
  resolution_event_id                            uuid        NOT NULL UNIQUE,
  resolution_event_envelope_sha256               text        NOT NULL CHECK (resolution_event_envelope_sha256 ~ '^[0-9a-f]{64}$'),
  coordinator_receipt_ref                        text        NOT NULL UNIQUE,
  coordinator_receipt_digest                     text        NOT NULL CHECK (coordinator_receipt_digest ~ '^[0-9a-f]{64}$'),
  work_generation                                bigint      NOT NULL,
  applied_at                                     timestamptz NOT NULL,
  PRIMARY KEY (billing_finalization_fence_id, reconciliation_generation),
  FOREIGN KEY (billing_finalization_fence_id, reconciliation_generation) REFERENCES billing.finalization_reconciliation_resolutions
);
CREATE TRIGGER /* guard BL001.resolution-watermarks-immutable */ resolution_watermarks_immutable
  BEFORE UPDATE OR DELETE ON billing.resolution_watermarks
  FOR EACH ROW EXECUTE FUNCTION billing.reject_change();
CREATE TRIGGER /* guard BL001.resolution-watermarks-no-truncate */ resolution_watermarks_no_truncate
  BEFORE TRUNCATE ON billing.resolution_watermarks
  FOR EACH STATEMENT EXECUTE FUNCTION billing.reject_change();

-- The fence's one exit from a case generation: pending_evaluation with a
-- new Work generation, through that generation's resolution watermark.
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
  IF /* guard BL003.reconciliation-exit */ OLD.coordination_state = 'reconciliation_required'
     AND (NEW.coordination_state <> 'pending_evaluation' OR NOT EXISTS (SELECT 1 FROM billing.resolution_watermarks m
        WHERE m.billing_finalization_fence_id = OLD.billing_finalization_fence_id
          AND m.reconciliation_generation = OLD.reconciliation_generation
          AND m.work_generation = NEW.latest_work_generation)) THEN
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

GRANT SELECT, INSERT ON billing.consumed_command_grants, billing.finalization_reconciliation_resolutions,
  billing.resolution_watermarks TO oceanway_billing;
GRANT EXECUTE ON FUNCTION billing.guard_resolution() TO oceanway_billing;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
SELECT 1; -- forward-only: resolutions are facts
-- +goose StatementEnd
