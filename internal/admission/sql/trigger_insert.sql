-- name: TriggerInsert
-- $1..$4 trigger snapshot quadruple, $5 fence id, $6 generation, $7 body, $8 captured at.
INSERT INTO admission.billing_finalization_trigger_snapshots (trigger_snapshot_ref, trigger_snapshot_schema_version,
    trigger_snapshot_digest_algorithm_version, trigger_snapshot_digest, billing_finalization_fence_id,
    work_generation, snapshot_body, captured_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
