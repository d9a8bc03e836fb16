-- Canary proofs (issue 33): what Core found when the canary, driving one
-- run through the public API only, asked it to check the loop closed
-- (recordCanaryProof). Each proof is a content-addressed CanaryProof@1: its
-- canonical JSON and the sha256 of it, which PostgreSQL recomputes (the
-- check below), so a stored proof cannot claim another content. serve
-- --public-admission-mode enabled starts only when a passed proof exists.
-- A proof never changes (AD001).

-- +goose Up
-- +goose StatementBegin
CREATE TABLE admission.canary_proofs (
  canary_proof_ref text NOT NULL PRIMARY KEY CHECK (canary_proof_ref ~ '^canary-proof/[0-9a-f-]{36}/[0-9a-f]{64}$'),
  canary_proof_schema_version text NOT NULL CHECK (canary_proof_schema_version = '1'),
  canary_proof_digest_algorithm_version text NOT NULL CHECK (canary_proof_digest_algorithm_version = 'jcs-sha256-v1'),
  canary_proof_digest text NOT NULL CHECK (canary_proof_digest ~ '^[0-9a-f]{64}$'),
  run_id uuid NOT NULL REFERENCES admission.runs (run_id),
  billing_reservation_id uuid NOT NULL,
  verdict text NOT NULL CHECK (verdict IN ('passed', 'failed')),
  proof_json text NOT NULL,
  recorded_at timestamptz NOT NULL,
  -- coalesce: a key the JSON lacks makes a comparison NULL, and a NULL
  -- CHECK would let the row in.
  CONSTRAINT canary_proof_content_addressed CHECK (/* guard AD001.canary-proof-content-addressed */ coalesce(
    encode(sha256(convert_to(proof_json, 'UTF8')), 'hex') = canary_proof_digest
    AND canary_proof_ref LIKE '%/' || canary_proof_digest
    AND jsonb_typeof(proof_json::jsonb) = 'object'
    AND proof_json::jsonb ->> 'verdict' = verdict
    AND proof_json::jsonb ->> 'runId' = run_id::text
    AND proof_json::jsonb ->> 'billingReservationId' = billing_reservation_id::text, false))
);

CREATE INDEX canary_proofs_passed ON admission.canary_proofs (recorded_at) WHERE verdict = 'passed';

CREATE TRIGGER /* guard AD001.canary-proof-immutable */ canary_proofs_immutable
  BEFORE UPDATE OR DELETE ON admission.canary_proofs
  FOR EACH ROW EXECUTE FUNCTION admission.reject_change();
CREATE TRIGGER /* guard AD001.canary-proof-no-truncate */ canary_proofs_no_truncate
  BEFORE TRUNCATE ON admission.canary_proofs
  FOR EACH STATEMENT EXECUTE FUNCTION admission.reject_change();

REVOKE ALL ON admission.canary_proofs FROM PUBLIC;
GRANT SELECT, INSERT ON admission.canary_proofs TO oceanway_admission;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DROP TABLE admission.canary_proofs;
-- +goose StatementEnd
