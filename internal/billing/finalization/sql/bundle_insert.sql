-- name: BundleInsert
INSERT INTO billing.finalization_validation_bundles
  (bundle_ref, bundle_schema_version, bundle_digest_algorithm_version, bundle_digest, manifest_ref, bundle_body)
VALUES (@ref, @schema_version, @digest_algorithm_version, @digest, @manifest_ref, @body)
ON CONFLICT (bundle_ref) DO NOTHING;
