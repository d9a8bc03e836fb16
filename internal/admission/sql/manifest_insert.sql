-- name: ManifestInsert
-- $1..$4 manifest quadruple, $5 run id, $6 canonical body, $7 admitted at.
INSERT INTO admission.run_admission_manifests (run_admission_manifest_ref, run_admission_manifest_schema_version,
    run_admission_manifest_digest_algorithm_version, run_admission_manifest_digest, run_id, manifest_body, admitted_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
