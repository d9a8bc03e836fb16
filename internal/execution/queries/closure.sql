-- name: RejectionEvidenceInsert :exec
-- The Gateway's GatewayPreBindingRejectionFact@1 as readDispatchSlot@1
-- answered it, stored with the attempt's AttemptNotDispatchedFact@1 (the
-- database checks the fact against it, EX007).
INSERT INTO execution.gateway_rejection_evidence (execution_attempt_id, read_contract_version, slot_state,
    gateway_pre_binding_rejection_fact_ref, gateway_pre_binding_rejection_fact_schema_version,
    gateway_pre_binding_rejection_fact_digest_algorithm_version, gateway_pre_binding_rejection_fact_digest,
    rejection_reason_code, rejection_fact_body, received_at)
VALUES (@execution_attempt_id, @read_contract_version, @slot_state, @gateway_pre_binding_rejection_fact_ref,
    @gateway_pre_binding_rejection_fact_schema_version, @gateway_pre_binding_rejection_fact_digest_algorithm_version,
    @gateway_pre_binding_rejection_fact_digest, @rejection_reason_code, @rejection_fact_body, @received_at);

-- name: NotDispatchedInsert :exec
INSERT INTO execution.attempt_not_dispatched_facts (execution_attempt_id, attempt_not_dispatched_fact_ref,
    attempt_not_dispatched_fact_schema_version, attempt_not_dispatched_fact_digest_algorithm_version,
    attempt_not_dispatched_fact_digest, gateway_pre_binding_rejection_fact_ref, fact_body, recorded_at)
VALUES (@execution_attempt_id, @attempt_not_dispatched_fact_ref, @attempt_not_dispatched_fact_schema_version,
    @attempt_not_dispatched_fact_digest_algorithm_version, @attempt_not_dispatched_fact_digest,
    @gateway_pre_binding_rejection_fact_ref, @fact_body, @recorded_at);

-- name: EligibilityInsert :exec
INSERT INTO execution.eligibility_facts (execution_attempt_id, run_id, execution_eligibility_fact_ref,
    execution_eligibility_fact_schema_version, execution_eligibility_fact_digest_algorithm_version,
    execution_eligibility_fact_digest, dispatch_disposition, not_dispatched_execution_attempt_id, fact_body,
    event_id, finalized_at)
VALUES (@execution_attempt_id, @run_id, @execution_eligibility_fact_ref, @execution_eligibility_fact_schema_version,
    @execution_eligibility_fact_digest_algorithm_version, @execution_eligibility_fact_digest, @dispatch_disposition,
    sqlc.narg(not_dispatched_execution_attempt_id), @fact_body, @event_id, @finalized_at);

-- name: EligibilityByAttempt :one
SELECT * FROM execution.eligibility_facts WHERE execution_attempt_id = @execution_attempt_id;

-- name: AttemptForShare :one
SELECT * FROM execution.attempts WHERE execution_attempt_id = @execution_attempt_id FOR SHARE;

-- name: RunStateForUpdate :one
SELECT * FROM execution.run_execution_states WHERE run_id = @run_id FOR UPDATE;

-- name: ClosureAttempts :many
-- Every attempt of the run with its eligibility fact, both locked, in the
-- attempt set's order.
SELECT a.run_step_id, a.execution_attempt_id, a.attempt_execution_manifest_ref,
       a.attempt_execution_manifest_schema_version, a.attempt_execution_manifest_digest_algorithm_version,
       a.attempt_execution_manifest_digest,
       e.execution_eligibility_fact_ref, e.execution_eligibility_fact_schema_version,
       e.execution_eligibility_fact_digest_algorithm_version, e.execution_eligibility_fact_digest,
       e.dispatch_disposition
  FROM execution.attempts a
  LEFT JOIN execution.eligibility_facts e ON e.execution_attempt_id = a.execution_attempt_id
 WHERE a.run_id = @run_id
 ORDER BY a.run_step_id, a.execution_attempt_id
   FOR SHARE OF a;

-- name: EligibilityLockByRun :many
SELECT execution_attempt_id FROM execution.eligibility_facts WHERE run_id = @run_id FOR SHARE;

-- name: AttemptSetInsert :exec
INSERT INTO execution.attempt_set_manifests (run_id, attempt_set_manifest_ref, attempt_set_manifest_schema_version,
    attempt_set_manifest_digest_algorithm_version, attempt_set_manifest_digest, attempt_count, manifest_body, closed_at)
VALUES (@run_id, @attempt_set_manifest_ref, @attempt_set_manifest_schema_version,
    @attempt_set_manifest_digest_algorithm_version, @attempt_set_manifest_digest, @attempt_count, @manifest_body, @closed_at);

-- name: RunCloseCAS :execrows
UPDATE execution.run_execution_states
   SET state = 'attempts_closed', state_version = 2, closed_at = @closed_at
 WHERE run_id = @run_id AND state = 'accepting_attempts' AND state_version = 1;

-- name: FinalizationInsert :exec
INSERT INTO execution.run_finalizations (run_id, run_execution_finalization_ref, run_execution_finalization_schema_version,
    run_execution_finalization_digest_algorithm_version, run_execution_finalization_digest,
    run_execution_finalization_state_version, closure_operation_id, attempt_count, fact_body, event_id, closed_at)
VALUES (@run_id, @run_execution_finalization_ref, @run_execution_finalization_schema_version,
    @run_execution_finalization_digest_algorithm_version, @run_execution_finalization_digest,
    @run_execution_finalization_state_version, @closure_operation_id, @attempt_count, @fact_body, @event_id, @closed_at);

-- name: FinalizationByRun :one
SELECT f.*, s.manifest_body AS attempt_set_body
  FROM execution.run_finalizations f
  JOIN execution.attempt_set_manifests s ON s.run_id = f.run_id
 WHERE f.run_id = @run_id;
