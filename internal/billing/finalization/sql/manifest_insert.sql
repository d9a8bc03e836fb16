-- name: ManifestInsert
-- Insert-or-compare: a manifest ref is derived from its content, so a
-- replay conflicts on the ref and the caller compares the stored digest.
INSERT INTO billing.finalization_input_manifests
  (manifest_ref, manifest_schema_version, manifest_digest_algorithm_version, manifest_digest,
   billing_finalization_fence_id, billing_reservation_id, dimension_count, target_total, manifest_body)
VALUES (@ref, @schema_version, @digest_algorithm_version, @digest,
        @fence_id, @reservation_id, @dimension_count, @target_total::numeric, @body)
ON CONFLICT (manifest_ref) DO NOTHING;
