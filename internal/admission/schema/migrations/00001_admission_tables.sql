-- Core admission (schema admission, database core), ADR-031 EX-1: one local
-- transaction creates the admission request record, the Run, its
-- content-addressed RunAdmissionManifest, the credits Reservation, the
-- unique BillingFinalizationFence with its first durable Work (and that
-- Work's content-addressed trigger snapshot), and appends run.created@2.0 +
-- wallet.reserved@2.0 to the outbox. docs/operations.md documents every
-- table and which object definitions are ours.
--
-- Custom SQLSTATE: AD001 update/delete of an immutable admission fact.

-- +goose Up
-- +goose StatementBegin
CREATE SCHEMA admission;

COMMENT ON SCHEMA admission IS
  'OceanWay Core admission: runs, run admission manifests, credits reservations, billing finalization fences and their first work.';

CREATE FUNCTION admission.reject_change() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  RAISE EXCEPTION 'admission: % on %.% is forbidden (immutable admission fact)', TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME
    USING ERRCODE = 'AD001';
END
$fn$;

-- Idempotency: one row per admission operation id, with the digest of the
-- canonical request. Same id + same digest = the same run; same id + another
-- digest is rejected.
CREATE TABLE admission.admission_requests (
  admission_operation_id           uuid        NOT NULL PRIMARY KEY,
  request_digest_algorithm_version text        NOT NULL CHECK (request_digest_algorithm_version = 'jcs-sha256-v1'),
  request_digest                   text        NOT NULL CHECK (request_digest ~ '^[0-9a-f]{64}$'),
  request_body                     text        NOT NULL,
  run_id                           uuid        NOT NULL UNIQUE,
  created_at                       timestamptz NOT NULL
);

-- RunAdmissionManifest@1 (our definition, docs/operations.md): stored as its
-- RFC 8785 canonical body; the quadruple columns are what events and later
-- manifests reference.
CREATE TABLE admission.run_admission_manifests (
  run_admission_manifest_ref                      text        NOT NULL PRIMARY KEY,
  run_admission_manifest_schema_version           text        NOT NULL CHECK (run_admission_manifest_schema_version = '1'),
  run_admission_manifest_digest_algorithm_version text        NOT NULL CHECK (run_admission_manifest_digest_algorithm_version = 'jcs-sha256-v1'),
  run_admission_manifest_digest                   text        NOT NULL CHECK (run_admission_manifest_digest ~ '^[0-9a-f]{64}$'),
  run_id                                          uuid        NOT NULL UNIQUE,
  manifest_body                                   text        NOT NULL,
  admitted_at                                     timestamptz NOT NULL,
  UNIQUE (run_admission_manifest_ref, run_admission_manifest_schema_version,
          run_admission_manifest_digest_algorithm_version, run_admission_manifest_digest)
);

CREATE TABLE admission.runs (
  run_id                                          uuid        NOT NULL PRIMARY KEY,
  admission_operation_id                          uuid        NOT NULL UNIQUE REFERENCES admission.admission_requests,
  tenant_kind                                     text        NOT NULL CHECK (tenant_kind = 'organization'),
  tenant_id                                       uuid        NOT NULL,
  workspace_id                                    uuid        NOT NULL,
  project_id                                      uuid,
  correlation_id                                  uuid        NOT NULL,
  billing_account_id                              uuid        NOT NULL,
  billing_reservation_id                          uuid        NOT NULL UNIQUE,
  run_admission_manifest_ref                      text        NOT NULL,
  run_admission_manifest_schema_version           text        NOT NULL,
  run_admission_manifest_digest_algorithm_version text        NOT NULL,
  run_admission_manifest_digest                   text        NOT NULL,
  run_created_event_id                            uuid        NOT NULL UNIQUE,
  admitted_at                                     timestamptz NOT NULL,
  FOREIGN KEY (run_admission_manifest_ref, run_admission_manifest_schema_version,
               run_admission_manifest_digest_algorithm_version, run_admission_manifest_digest)
    REFERENCES admission.run_admission_manifests (run_admission_manifest_ref, run_admission_manifest_schema_version,
               run_admission_manifest_digest_algorithm_version, run_admission_manifest_digest)
);

-- Credits reservation: integer credits, never a float. Terminal states
-- (settled, released) are Billing finalization's, not admission's.
CREATE TABLE admission.reservations (
  billing_reservation_id   uuid        NOT NULL PRIMARY KEY,
  billing_account_id       uuid        NOT NULL,
  run_id                   uuid        NOT NULL UNIQUE REFERENCES admission.runs,
  economic_identity_kind   text        NOT NULL CHECK (economic_identity_kind = 'credits'),
  reserved_credits         bigint      NOT NULL CHECK (reserved_credits > 0 AND reserved_credits <= 9007199254740991),
  state                    text        NOT NULL CHECK (state = 'reserved'),
  wallet_reserved_event_id uuid        NOT NULL UNIQUE,
  created_at               timestamptz NOT NULL
);

-- The unique Billing Finalization Fence of a reservation (one per run),
-- created at admission with its first Work generation active.
CREATE TABLE admission.billing_finalization_fences (
  billing_finalization_fence_id uuid        NOT NULL PRIMARY KEY,
  billing_reservation_id        uuid        NOT NULL UNIQUE REFERENCES admission.reservations,
  run_id                        uuid        NOT NULL UNIQUE REFERENCES admission.runs,
  finalization_fence_revision   bigint      NOT NULL CHECK (finalization_fence_revision >= 1),
  coordination_state            text        NOT NULL CHECK (coordination_state = 'pending_evaluation'),
  active_work_generation        bigint      NOT NULL CHECK (active_work_generation >= 1),
  latest_work_generation        bigint      NOT NULL CHECK (latest_work_generation >= active_work_generation),
  -- No closure event applied yet (the Coordinator consumer advances it).
  closure_watermark_state       text        NOT NULL CHECK (closure_watermark_state = 'none'),
  settlement_input_watermark_state text     NOT NULL CHECK (settlement_input_watermark_state = 'none'),
  created_at                    timestamptz NOT NULL
);

-- BillingFinalizationTriggerSnapshot@1 (our definition): what a Work
-- generation was triggered by.
CREATE TABLE admission.billing_finalization_trigger_snapshots (
  trigger_snapshot_ref                      text        NOT NULL PRIMARY KEY,
  trigger_snapshot_schema_version           text        NOT NULL CHECK (trigger_snapshot_schema_version = '1'),
  trigger_snapshot_digest_algorithm_version text        NOT NULL CHECK (trigger_snapshot_digest_algorithm_version = 'jcs-sha256-v1'),
  trigger_snapshot_digest                   text        NOT NULL CHECK (trigger_snapshot_digest ~ '^[0-9a-f]{64}$'),
  billing_finalization_fence_id             uuid        NOT NULL REFERENCES admission.billing_finalization_fences,
  work_generation                           bigint      NOT NULL CHECK (work_generation >= 1),
  snapshot_body                             text        NOT NULL,
  captured_at                               timestamptz NOT NULL,
  UNIQUE (billing_finalization_fence_id, work_generation)
);

-- BillingFinalizationWork@1 (our definition): durable, content-addressed,
-- one per fence generation. The admission generation waits:
-- closure_event_not_applied (ADR-031) until the Coordinator consumer has
-- applied execution.run-finalization.closed@1 and scheduled a new generation.
CREATE TABLE admission.billing_finalization_works (
  billing_finalization_fence_id     uuid        NOT NULL REFERENCES admission.billing_finalization_fences,
  work_generation                   bigint      NOT NULL CHECK (work_generation >= 1),
  work_ref                          text        NOT NULL UNIQUE,
  work_schema_version               text        NOT NULL CHECK (work_schema_version = '1'),
  work_digest_algorithm_version     text        NOT NULL CHECK (work_digest_algorithm_version = 'jcs-sha256-v1'),
  work_digest                       text        NOT NULL CHECK (work_digest ~ '^[0-9a-f]{64}$'),
  billing_finalization_operation_id uuid        NOT NULL UNIQUE,
  trigger_snapshot_ref              text        NOT NULL UNIQUE REFERENCES admission.billing_finalization_trigger_snapshots,
  work_body                         text        NOT NULL,
  work_state                        text        NOT NULL CHECK (work_state = 'waiting'),
  waiting_reason                    text        NOT NULL CHECK (waiting_reason = 'closure_event_not_applied'),
  created_at                        timestamptz NOT NULL,
  PRIMARY KEY (billing_finalization_fence_id, work_generation)
);

-- pending_evaluation binds the active generation's one Work (checked at commit).
ALTER TABLE admission.billing_finalization_fences
  ADD CONSTRAINT billing_finalization_fences_active_work
  FOREIGN KEY (billing_finalization_fence_id, active_work_generation)
  REFERENCES admission.billing_finalization_works (billing_finalization_fence_id, work_generation)
  DEFERRABLE INITIALLY DEFERRED;

CREATE TRIGGER /* guard AD001.requests-immutable */ admission_requests_immutable BEFORE UPDATE OR DELETE ON admission.admission_requests
  FOR EACH ROW EXECUTE FUNCTION admission.reject_change();
CREATE TRIGGER /* guard AD001.manifests-immutable */ run_admission_manifests_immutable BEFORE UPDATE OR DELETE ON admission.run_admission_manifests
  FOR EACH ROW EXECUTE FUNCTION admission.reject_change();
CREATE TRIGGER trigger_snapshots_immutable BEFORE UPDATE OR DELETE ON admission.billing_finalization_trigger_snapshots
  FOR EACH ROW EXECUTE FUNCTION admission.reject_change();
CREATE TRIGGER works_immutable_identity BEFORE DELETE ON admission.billing_finalization_works
  FOR EACH ROW EXECUTE FUNCTION admission.reject_change();
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DROP SCHEMA admission CASCADE;
-- +goose StatementEnd
