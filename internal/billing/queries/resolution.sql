-- name: ResolutionByOperation :one
SELECT * FROM billing.finalization_reconciliation_resolutions WHERE resolution_operation_id = @resolution_operation_id;

-- name: ResolutionGet :one
SELECT * FROM billing.finalization_reconciliation_resolutions
 WHERE billing_finalization_fence_id = @billing_finalization_fence_id AND reconciliation_generation = @reconciliation_generation;

-- name: GrantConsume :execrows
-- A grant's jti, once (0 rows: consumed before).
INSERT INTO billing.consumed_command_grants (grant_jti, grant_sha256, grant_audience, consumed_at)
VALUES (@grant_jti, @grant_sha256, 'billing_finalization_reconciliation_resolution_command', @consumed_at)
ON CONFLICT DO NOTHING;

-- name: ResolutionInsert :exec
INSERT INTO billing.finalization_reconciliation_resolutions (billing_finalization_fence_id, reconciliation_generation,
    resolution_operation_id, applied_ref, applied_schema_version, applied_digest_algorithm_version, applied_digest,
    actor_workforce_principal_id, grant_jti, finalization_fence_revision, event_id, event_envelope_sha256, applied_body, applied_at)
VALUES (@billing_finalization_fence_id, @reconciliation_generation, @resolution_operation_id, @applied_ref,
    @applied_schema_version, @applied_digest_algorithm_version, @applied_digest, @actor_workforce_principal_id, @grant_jti,
    @finalization_fence_revision, @event_id, @event_envelope_sha256, @applied_body, @applied_at);

-- name: ResolutionWatermarkInsert :exec
INSERT INTO billing.resolution_watermarks (billing_finalization_fence_id, reconciliation_generation, resolution_event_id,
    resolution_event_envelope_sha256, coordinator_receipt_ref, coordinator_receipt_digest, work_generation, applied_at)
VALUES (@billing_finalization_fence_id, @reconciliation_generation, @resolution_event_id, @resolution_event_envelope_sha256,
    @coordinator_receipt_ref, @coordinator_receipt_digest, @work_generation, @applied_at);
