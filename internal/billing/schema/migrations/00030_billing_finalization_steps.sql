-- The finalization pipeline's steps (ADR-031 "Billing Finalization 使用三组
-- 完整验证", BI-1): each evaluation stores, content-addressed and
-- insert-or-compare, its FinalizationInputManifest@1, the owner receipts it
-- obtained (the Execution closure receipt, the Metering current receipts),
-- its FinalizationValidationBundle@1 (successes only) and its
-- BillingFinalizationDecision@1. Refs derive from content, so the same
-- inputs in any order hit the same rows; a row never changes (BL001).
-- Every table is keyed by ref with a unique digest; lookups by fence go
-- through the fence index (one fence: a handful of evaluations).

-- +goose Up
-- +goose StatementBegin
CREATE TABLE billing.finalization_input_manifests (
  manifest_ref                      text        NOT NULL PRIMARY KEY,
  manifest_schema_version           text        NOT NULL CHECK (manifest_schema_version = '1'),
  manifest_digest_algorithm_version text        NOT NULL CHECK (manifest_digest_algorithm_version = 'jcs-sha256-v1'),
  manifest_digest                   text        NOT NULL UNIQUE CHECK (manifest_digest ~ '^[0-9a-f]{64}$'),
  billing_finalization_fence_id     uuid        NOT NULL REFERENCES billing.billing_finalization_fences,
  billing_reservation_id            uuid        NOT NULL,
  dimension_count                   integer     NOT NULL CHECK (dimension_count >= 0),
  target_total                      numeric     NOT NULL CHECK (target_total >= 0),
  manifest_body                     text        NOT NULL,
  recorded_at                       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX finalization_input_manifests_fence ON billing.finalization_input_manifests (billing_finalization_fence_id);

-- Owner receipts of an evaluation: kind names the contract
-- (RunExecutionFinalizationReceipt@1, the Metering current receipt).
CREATE TABLE billing.finalization_owner_receipts (
  receipt_ref                      text        NOT NULL PRIMARY KEY,
  receipt_kind                     text        NOT NULL CHECK (receipt_kind ~ '^[A-Za-z]+(@[0-9]+)?$'),
  receipt_schema_version           text        NOT NULL,
  receipt_digest_algorithm_version text        NOT NULL CHECK (receipt_digest_algorithm_version = 'jcs-sha256-v1'),
  receipt_digest                   text        NOT NULL CHECK (receipt_digest ~ '^[0-9a-f]{64}$'),
  manifest_ref                     text        NOT NULL REFERENCES billing.finalization_input_manifests,
  receipt_body                     text        NOT NULL,
  recorded_at                      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (receipt_kind, receipt_digest)
);
CREATE INDEX finalization_owner_receipts_manifest ON billing.finalization_owner_receipts (manifest_ref);

CREATE TABLE billing.finalization_validation_bundles (
  bundle_ref                      text        NOT NULL PRIMARY KEY,
  bundle_schema_version           text        NOT NULL CHECK (bundle_schema_version = '1'),
  bundle_digest_algorithm_version text        NOT NULL CHECK (bundle_digest_algorithm_version = 'jcs-sha256-v1'),
  bundle_digest                   text        NOT NULL UNIQUE CHECK (bundle_digest ~ '^[0-9a-f]{64}$'),
  manifest_ref                    text        NOT NULL REFERENCES billing.finalization_input_manifests,
  bundle_body                     text        NOT NULL,
  recorded_at                     timestamptz NOT NULL DEFAULT now()
);

-- The decision of an evaluation; only a success binds a bundle, and only a
-- success carries amounts (settled + released = reserved, settled ≤
-- reserved: the database re-states the contract's rule).
CREATE TABLE billing.finalization_decisions (
  decision_ref                      text        NOT NULL PRIMARY KEY,
  decision_schema_version           text        NOT NULL CHECK (decision_schema_version = '1'),
  decision_digest_algorithm_version text        NOT NULL CHECK (decision_digest_algorithm_version = 'jcs-sha256-v1'),
  decision_digest                   text        NOT NULL UNIQUE CHECK (decision_digest ~ '^[0-9a-f]{64}$'),
  billing_finalization_fence_id     uuid        NOT NULL REFERENCES billing.billing_finalization_fences,
  manifest_ref                      text        NOT NULL REFERENCES billing.finalization_input_manifests,
  bundle_ref                        text        REFERENCES billing.finalization_validation_bundles,
  decision                          text        NOT NULL CHECK (decision IN
    ('settle_and_release_remainder', 'release_all', 'blocked', 'reconciliation_required')),
  reason_code                       text,
  reserved_amount                   numeric     NOT NULL CHECK (reserved_amount > 0),
  settled_amount                    numeric     CHECK (settled_amount >= 0),
  released_amount                   numeric     CHECK (released_amount >= 0),
  decision_body                     text        NOT NULL,
  recorded_at                       timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT decision_success_shape CHECK (
    (decision IN ('settle_and_release_remainder', 'release_all')) =
      (bundle_ref IS NOT NULL AND settled_amount IS NOT NULL AND released_amount IS NOT NULL AND reason_code IS NULL)),
  CONSTRAINT decision_evaluation_shape CHECK (
    (decision IN ('blocked', 'reconciliation_required')) =
      (bundle_ref IS NULL AND settled_amount IS NULL AND released_amount IS NULL AND reason_code IS NOT NULL)),
  CONSTRAINT decision_adds_up CHECK (settled_amount IS NULL OR
    (settled_amount + released_amount = reserved_amount AND settled_amount <= reserved_amount)),
  CONSTRAINT decision_release_all CHECK (decision <> 'release_all' OR settled_amount = 0)
);
CREATE INDEX finalization_decisions_fence ON billing.finalization_decisions (billing_finalization_fence_id);

CREATE TRIGGER /* guard BL001.input-manifests-immutable */ finalization_input_manifests_immutable BEFORE UPDATE OR DELETE ON billing.finalization_input_manifests
  FOR EACH ROW EXECUTE FUNCTION billing.reject_change();
CREATE TRIGGER /* guard BL001.owner-receipts-immutable */ finalization_owner_receipts_immutable BEFORE UPDATE OR DELETE ON billing.finalization_owner_receipts
  FOR EACH ROW EXECUTE FUNCTION billing.reject_change();
CREATE TRIGGER /* guard BL001.validation-bundles-immutable */ finalization_validation_bundles_immutable BEFORE UPDATE OR DELETE ON billing.finalization_validation_bundles
  FOR EACH ROW EXECUTE FUNCTION billing.reject_change();
CREATE TRIGGER /* guard BL001.decisions-immutable */ finalization_decisions_immutable BEFORE UPDATE OR DELETE ON billing.finalization_decisions
  FOR EACH ROW EXECUTE FUNCTION billing.reject_change();

-- The finalization worker's claim (sql/work_claim.sql) reads only fences
-- that wait for an evaluation: a partial index keeps it off the history of
-- committed fences.
CREATE INDEX billing_finalization_fences_pending ON billing.billing_finalization_fences (billing_finalization_fence_id)
  WHERE coordination_state = 'pending_evaluation';

REVOKE ALL ON billing.finalization_input_manifests, billing.finalization_owner_receipts,
  billing.finalization_validation_bundles, billing.finalization_decisions FROM PUBLIC;
GRANT SELECT, INSERT ON billing.finalization_input_manifests, billing.finalization_owner_receipts,
  billing.finalization_validation_bundles, billing.finalization_decisions TO oceanway_billing;
-- +goose StatementEnd
