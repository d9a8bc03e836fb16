-- name: RunManifest
-- The Run's stored manifest quadruple as the Run row references it (the
-- equality check before append).
-- $1 run id.
SELECT m.run_admission_manifest_ref, m.run_admission_manifest_schema_version,
       m.run_admission_manifest_digest_algorithm_version, m.run_admission_manifest_digest
  FROM admission.runs r
  JOIN admission.run_admission_manifests m
    ON m.run_admission_manifest_ref = r.run_admission_manifest_ref AND m.run_id = r.run_id
 WHERE r.run_id = $1
