-- name: ManifestDigest
SELECT manifest_digest FROM billing.finalization_input_manifests WHERE manifest_ref = @ref;
