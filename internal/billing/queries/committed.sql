-- name: CommittedInsert :exec
INSERT INTO billing.finalization_committed (committed_ref, committed_schema_version, committed_digest_algorithm_version,
    committed_digest, billing_reservation_id, billing_finalization_fence_id, work_generation,
    billing_finalization_operation_id, finalization_fence_revision, decision, reserved_amount, settled_amount,
    released_amount, posting_group_id, event_id, event_envelope_sha256, committed_body, committed_at)
VALUES (@committed_ref, @committed_schema_version, @committed_digest_algorithm_version, @committed_digest,
    @billing_reservation_id, @billing_finalization_fence_id, @work_generation, @billing_finalization_operation_id,
    @finalization_fence_revision, @decision, @reserved_amount::numeric, @settled_amount::numeric,
    @released_amount::numeric, @posting_group_id, @event_id, @event_envelope_sha256, @committed_body, @committed_at);

-- name: CommittedByReservation :one
SELECT committed_ref, committed_body, event_id, event_envelope_sha256
  FROM billing.finalization_committed
 WHERE billing_reservation_id = @billing_reservation_id;

-- name: CommittedByRef :one
SELECT committed_ref, committed_body, event_id, event_envelope_sha256
  FROM billing.finalization_committed
 WHERE committed_ref = @committed_ref;

-- name: ClosureByFence :one
SELECT closure_event_id, closure_event_envelope_digest_algorithm_version, closure_event_envelope_sha256,
       closure_operation_id, run_execution_finalization_ref, run_execution_finalization_schema_version,
       run_execution_finalization_digest_algorithm_version, run_execution_finalization_digest,
       run_execution_finalization_state_version, attempt_set_manifest_ref, attempt_set_manifest_schema_version,
       attempt_set_manifest_digest_algorithm_version, attempt_set_manifest_digest, attempt_count,
       coordinator_receipt_ref, coordinator_receipt_schema_version, coordinator_receipt_digest_algorithm_version,
       coordinator_receipt_digest, work_generation
  FROM billing.closure_watermarks
 WHERE billing_finalization_fence_id = @billing_finalization_fence_id;

-- name: ClosureInsert :exec
INSERT INTO billing.closure_watermarks (billing_finalization_fence_id, run_id, closure_event_id,
    closure_event_envelope_digest_algorithm_version, closure_event_envelope_sha256, closure_operation_id,
    run_execution_finalization_ref, run_execution_finalization_schema_version,
    run_execution_finalization_digest_algorithm_version, run_execution_finalization_digest,
    run_execution_finalization_state_version, attempt_set_manifest_ref, attempt_set_manifest_schema_version,
    attempt_set_manifest_digest_algorithm_version, attempt_set_manifest_digest, attempt_count,
    coordinator_receipt_ref, coordinator_receipt_schema_version, coordinator_receipt_digest_algorithm_version,
    coordinator_receipt_digest, work_generation, applied_at)
VALUES (@billing_finalization_fence_id, @run_id, @closure_event_id, @closure_event_envelope_digest_algorithm_version,
    @closure_event_envelope_sha256, @closure_operation_id, @run_execution_finalization_ref,
    @run_execution_finalization_schema_version, @run_execution_finalization_digest_algorithm_version,
    @run_execution_finalization_digest, @run_execution_finalization_state_version, @attempt_set_manifest_ref,
    @attempt_set_manifest_schema_version, @attempt_set_manifest_digest_algorithm_version, @attempt_set_manifest_digest,
    @attempt_count, @coordinator_receipt_ref, @coordinator_receipt_schema_version,
    @coordinator_receipt_digest_algorithm_version, @coordinator_receipt_digest, @work_generation, @applied_at);

-- name: EvaluationInsert :exec
INSERT INTO billing.finalization_evaluations (billing_finalization_fence_id, work_generation,
    billing_finalization_operation_id, outcome, reason_code, reason_detail, decision_ref, decision_schema_version,
    decision_digest_algorithm_version, decision_digest, recorded_at)
VALUES (@billing_finalization_fence_id, @work_generation, @billing_finalization_operation_id, @outcome, @reason_code,
    @reason_detail, sqlc.narg(decision_ref), sqlc.narg(decision_schema_version),
    sqlc.narg(decision_digest_algorithm_version), sqlc.narg(decision_digest), @recorded_at);

-- name: EvaluationGet :one
SELECT billing_finalization_operation_id, outcome, reason_code, reason_detail, decision_ref, decision_schema_version,
       decision_digest_algorithm_version, decision_digest, recorded_at
  FROM billing.finalization_evaluations
 WHERE billing_finalization_fence_id = @billing_finalization_fence_id AND work_generation = @work_generation;

-- name: SettlementMarks :many
-- A reservation's settlement-input watermarks (what a trigger snapshot freezes).
SELECT settlement_dimension_id, settlement_input_state_version, settlement_input_snapshot_ref,
       settlement_input_snapshot_schema_version, settlement_input_snapshot_digest_algorithm_version,
       settlement_input_snapshot_digest
  FROM billing.settlement_input_watermarks
 WHERE billing_reservation_id = @billing_reservation_id
 ORDER BY settlement_dimension_id;

-- name: SettlementMarkLock :one
SELECT run_id, run_step_id, execution_attempt_id, charge_dimension_key, settlement_economic_identity,
       settlement_input_snapshot_ref, settlement_input_snapshot_schema_version,
       settlement_input_snapshot_digest_algorithm_version, settlement_input_snapshot_digest,
       settlement_input_state_version, inbox_revision
  FROM billing.settlement_input_watermarks
 WHERE billing_reservation_id = @billing_reservation_id AND settlement_dimension_id = @settlement_dimension_id
   FOR UPDATE;

-- name: SettlementMarkInsert :exec
INSERT INTO billing.settlement_input_watermarks (billing_reservation_id, settlement_dimension_id, run_id, run_step_id,
    execution_attempt_id, charge_dimension_key, settlement_economic_identity, settlement_input_snapshot_ref,
    settlement_input_snapshot_schema_version, settlement_input_snapshot_digest_algorithm_version,
    settlement_input_snapshot_digest, settlement_input_state_version, last_event_id, inbox_revision, updated_at)
VALUES (@billing_reservation_id, @settlement_dimension_id, @run_id, @run_step_id, @execution_attempt_id,
    @charge_dimension_key, @settlement_economic_identity, @settlement_input_snapshot_ref,
    @settlement_input_snapshot_schema_version, @settlement_input_snapshot_digest_algorithm_version,
    @settlement_input_snapshot_digest, @settlement_input_state_version, @last_event_id, 1, @updated_at);

-- name: SettlementMarkAdvance :exec
UPDATE billing.settlement_input_watermarks
   SET settlement_input_snapshot_ref = @settlement_input_snapshot_ref,
       settlement_input_snapshot_schema_version = @settlement_input_snapshot_schema_version,
       settlement_input_snapshot_digest_algorithm_version = @settlement_input_snapshot_digest_algorithm_version,
       settlement_input_snapshot_digest = @settlement_input_snapshot_digest,
       settlement_input_state_version = @settlement_input_state_version, last_event_id = @last_event_id,
       inbox_revision = inbox_revision + 1, updated_at = @updated_at
 WHERE billing_reservation_id = @billing_reservation_id AND settlement_dimension_id = @settlement_dimension_id;
