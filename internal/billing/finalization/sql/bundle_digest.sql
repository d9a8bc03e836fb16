-- name: BundleDigest
SELECT bundle_digest FROM billing.finalization_validation_bundles WHERE bundle_ref = @ref;
