-- name: FenceInsert :exec
-- The unique fence, pending_evaluation with generation 1 active (the
-- deferred foreign key proves generation 1's Work exists at commit).
INSERT INTO billing.billing_finalization_fences (billing_finalization_fence_id, billing_reservation_id, run_id,
    finalization_fence_revision, coordination_state, active_work_generation, latest_work_generation,
    closure_watermark_state, settlement_input_watermark_state, created_at, updated_at)
VALUES (@billing_finalization_fence_id, @billing_reservation_id, @run_id, 1, 'pending_evaluation', 1, 1, 'none', 'none',
    @created_at, @created_at);

-- name: FenceLock :one
-- Locks a fence for a transition (one writer at a time).
SELECT billing_finalization_fence_id, billing_reservation_id, run_id, finalization_fence_revision, coordination_state,
       active_work_generation, latest_work_generation, closure_watermark_state, settlement_input_watermark_state,
       waiting_reason, committed_ref, reconciliation_generation, reconciliation_case_ref,
       case_identity_ref, case_identity_schema_version, case_identity_digest_algorithm_version, case_identity_digest
  FROM billing.billing_finalization_fences
 WHERE billing_finalization_fence_id = @billing_finalization_fence_id
   FOR UPDATE;

-- name: FenceLockByRun :one
-- Locks the fence of a run (the coordinator's entry: events name the run).
SELECT billing_finalization_fence_id, billing_reservation_id, run_id, finalization_fence_revision, coordination_state,
       active_work_generation, latest_work_generation, closure_watermark_state, settlement_input_watermark_state,
       waiting_reason, committed_ref, reconciliation_generation, reconciliation_case_ref,
       case_identity_ref, case_identity_schema_version, case_identity_digest_algorithm_version, case_identity_digest
  FROM billing.billing_finalization_fences
 WHERE run_id = @run_id
   FOR UPDATE;

-- name: FenceByRun :one
-- A run's fence and its first Work (admission's replay answer).
SELECT f.billing_finalization_fence_id, f.coordination_state, f.finalization_fence_revision,
       w.work_generation, w.billing_finalization_operation_id, w.work_ref, w.work_schema_version,
       w.work_digest_algorithm_version, w.work_digest, w.work_state, w.waiting_reason
  FROM billing.billing_finalization_fences f
  JOIN billing.billing_finalization_works w
    ON w.billing_finalization_fence_id = f.billing_finalization_fence_id AND w.work_generation = 1
 WHERE f.run_id = @run_id;

-- name: FenceAdvance :exec
-- A new Work generation becomes the active one (revision + 1; the guard
-- trigger checks the graph).
UPDATE billing.billing_finalization_fences
   SET finalization_fence_revision = finalization_fence_revision + 1, coordination_state = 'pending_evaluation',
       active_work_generation = @work_generation, latest_work_generation = @work_generation,
       closure_watermark_state = @closure_watermark_state, settlement_input_watermark_state = @settlement_input_watermark_state,
       waiting_reason = NULL, updated_at = @updated_at
 WHERE billing_finalization_fence_id = @billing_finalization_fence_id;

-- name: FenceAwait :exec
-- The active generation ended without economic effect: the fence waits.
UPDATE billing.billing_finalization_fences
   SET finalization_fence_revision = finalization_fence_revision + 1, coordination_state = 'awaiting_finalization',
       active_work_generation = NULL, waiting_reason = @waiting_reason, updated_at = @updated_at
 WHERE billing_finalization_fence_id = @billing_finalization_fence_id;

-- name: FenceCommit :exec
-- The absorbing success.
UPDATE billing.billing_finalization_fences
   SET finalization_fence_revision = finalization_fence_revision + 1, coordination_state = 'committed',
       active_work_generation = NULL, committed_ref = @committed_ref, updated_at = @updated_at
 WHERE billing_finalization_fence_id = @billing_finalization_fence_id;

-- name: FenceEnterReconciliation :exec
-- The active generation needs reconciliation: the fence enters the next
-- case generation, bound to the identity Operations reserved (the guard
-- requires the generation's request row, written first).
UPDATE billing.billing_finalization_fences
   SET finalization_fence_revision = finalization_fence_revision + 1, coordination_state = 'reconciliation_required',
       active_work_generation = NULL, reconciliation_generation = @reconciliation_generation,
       reconciliation_case_ref = @reconciliation_case_ref, case_identity_ref = @case_identity_ref,
       case_identity_schema_version = @case_identity_schema_version,
       case_identity_digest_algorithm_version = @case_identity_digest_algorithm_version,
       case_identity_digest = @case_identity_digest, updated_at = @updated_at
 WHERE billing_finalization_fence_id = @billing_finalization_fence_id;

-- name: ReconciliationRequestInsert :exec
INSERT INTO billing.finalization_reconciliation_requests (billing_finalization_fence_id, reconciliation_generation,
    reconciliation_case_ref, case_request_operation_id, case_identity_ref, case_identity_schema_version,
    case_identity_digest_algorithm_version, case_identity_digest, predecessor_generation, billing_reservation_id, run_id,
    finalization_fence_revision, work_generation, billing_finalization_operation_id, decision_ref, decision_schema_version,
    decision_digest_algorithm_version, decision_digest, reason_code, event_id, event_envelope_sha256, requested_at)
VALUES (@billing_finalization_fence_id, @reconciliation_generation, @reconciliation_case_ref, @case_request_operation_id,
    @case_identity_ref, @case_identity_schema_version, @case_identity_digest_algorithm_version, @case_identity_digest,
    @predecessor_generation, @billing_reservation_id, @run_id, @finalization_fence_revision, @work_generation,
    @billing_finalization_operation_id, @decision_ref, @decision_schema_version, @decision_digest_algorithm_version,
    @decision_digest, @reason_code, @event_id, @event_envelope_sha256, @requested_at);

-- name: ReconciliationRequestGet :one
SELECT * FROM billing.finalization_reconciliation_requests
 WHERE billing_finalization_fence_id = @billing_finalization_fence_id AND reconciliation_generation = @reconciliation_generation;

-- name: TxNow :one
-- Database time of the transaction (every billing timestamp).
SELECT transaction_timestamp()::timestamptz AS now;

-- name: ReconciliationRequestForRead :one
-- A case generation's request with its Work and the reservation's account
-- (readBillingFinalizationDecisionForOperations compares them all).
SELECT q.*, w.work_ref, w.work_schema_version, w.work_digest_algorithm_version, w.work_digest, s.billing_account_id
  FROM billing.finalization_reconciliation_requests q
  JOIN billing.billing_finalization_works w
    ON w.billing_finalization_fence_id = q.billing_finalization_fence_id AND w.work_generation = q.work_generation
  JOIN billing.reservation_states s ON s.billing_reservation_id = q.billing_reservation_id
 WHERE q.billing_finalization_fence_id = @billing_finalization_fence_id AND q.reconciliation_generation = @reconciliation_generation;
