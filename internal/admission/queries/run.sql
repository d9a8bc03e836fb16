-- name: ManifestInsert :exec
INSERT INTO admission.run_admission_manifests (run_admission_manifest_ref, run_admission_manifest_schema_version,
    run_admission_manifest_digest_algorithm_version, run_admission_manifest_digest, run_id, manifest_body, admitted_at)
VALUES (@run_admission_manifest_ref, @run_admission_manifest_schema_version,
    @run_admission_manifest_digest_algorithm_version, @run_admission_manifest_digest, @run_id, @manifest_body, @admitted_at);

-- name: RunInsert :exec
INSERT INTO admission.runs (run_id, admission_operation_id, tenant_kind, tenant_id, workspace_id, project_id,
    correlation_id, billing_account_id, billing_reservation_id, run_admission_manifest_ref,
    run_admission_manifest_schema_version, run_admission_manifest_digest_algorithm_version,
    run_admission_manifest_digest, run_created_event_id, admitted_at)
VALUES (@run_id, @admission_operation_id, @tenant_kind, @tenant_id, @workspace_id, sqlc.narg(project_id),
    @correlation_id, @billing_account_id, @billing_reservation_id, @run_admission_manifest_ref,
    @run_admission_manifest_schema_version, @run_admission_manifest_digest_algorithm_version,
    @run_admission_manifest_digest, @run_created_event_id, @admitted_at);

-- name: RunManifest :one
-- The Run's stored manifest quadruple as the Run row references it (the
-- equality check before append).
SELECT m.run_admission_manifest_ref, m.run_admission_manifest_schema_version,
       m.run_admission_manifest_digest_algorithm_version, m.run_admission_manifest_digest
  FROM admission.runs r
  JOIN admission.run_admission_manifests m
    ON m.run_admission_manifest_ref = r.run_admission_manifest_ref AND m.run_id = r.run_id
 WHERE r.run_id = @run_id;

-- name: RunAdmitted :one
-- Everything admission created, by run id (the replay answer; billing's
-- fence and first Work come from billing.LookupFenceOfRun).
SELECT r.run_id, r.admission_operation_id, r.billing_account_id, r.billing_reservation_id,
       r.run_admission_manifest_ref, r.run_admission_manifest_schema_version,
       r.run_admission_manifest_digest_algorithm_version, r.run_admission_manifest_digest,
       r.run_created_event_id, s.wallet_reserved_event_id, s.reserved_credits,
       r.correlation_id, r.admitted_at
  FROM admission.runs r
  JOIN admission.reservations s ON s.run_id = r.run_id
 WHERE r.run_id = @run_id;

-- name: ManifestReadCandidates :many
-- The manifest stored under the requested ref and the manifest of the
-- requested run (at most two rows, both through unique indexes): the
-- readRunAdmissionManifest answer compares them with the request.
SELECT run_admission_manifest_ref, run_admission_manifest_schema_version,
       run_admission_manifest_digest_algorithm_version, run_admission_manifest_digest,
       run_id, manifest_body
  FROM admission.run_admission_manifests
 WHERE run_admission_manifest_ref = @run_admission_manifest_ref OR run_id = @run_id;
