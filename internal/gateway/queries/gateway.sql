-- name: SlotReserve :execrows
-- Reserves the slot; 0 rows when it exists (the caller locks and replays).
-- No conflict target: the primary key and the full slot key are both unique,
-- and a concurrent reservation may hit either.
INSERT INTO gateway.dispatch_slots (execution_attempt_id, gateway_deployment_id, attempt_execution_manifest_ref,
    attempt_execution_manifest_schema_version, attempt_execution_manifest_digest_algorithm_version,
    attempt_execution_manifest_digest, run_id, run_step_id, tenant_kind, tenant_id, workspace_id, project_id,
    manifest_body, state, reserved_at)
VALUES (@execution_attempt_id, @gateway_deployment_id, @attempt_execution_manifest_ref,
    @attempt_execution_manifest_schema_version, @attempt_execution_manifest_digest_algorithm_version,
    @attempt_execution_manifest_digest, @run_id, @run_step_id, @tenant_kind, @tenant_id, @workspace_id,
    sqlc.narg(project_id), @manifest_body, 'reserved', @reserved_at)
ON CONFLICT DO NOTHING;

-- name: SlotForUpdate :one
SELECT * FROM gateway.dispatch_slots WHERE execution_attempt_id = @execution_attempt_id FOR UPDATE;

-- name: SlotForShare :one
SELECT * FROM gateway.dispatch_slots WHERE execution_attempt_id = @execution_attempt_id FOR SHARE;

-- name: SlotByAttempt :one
SELECT * FROM gateway.dispatch_slots WHERE execution_attempt_id = @execution_attempt_id;

-- name: SlotTerminate :execrows
UPDATE gateway.dispatch_slots SET state = @state, reply_body = @reply_body, terminal_at = @terminal_at
 WHERE execution_attempt_id = @execution_attempt_id AND state = 'reserved';

-- name: RouteSnapshotInsert :exec
INSERT INTO gateway.route_snapshots (gateway_route_snapshot_ref, gateway_route_snapshot_schema_version,
    gateway_route_snapshot_digest_algorithm_version, gateway_route_snapshot_digest, execution_attempt_id, snapshot_body, captured_at)
VALUES (@gateway_route_snapshot_ref, @gateway_route_snapshot_schema_version, @gateway_route_snapshot_digest_algorithm_version,
    @gateway_route_snapshot_digest, @execution_attempt_id, @snapshot_body, @captured_at);

-- name: BindingInsert :exec
INSERT INTO gateway.attempt_route_bindings (attempt_route_binding_ref, attempt_route_binding_schema_version,
    attempt_route_binding_digest_algorithm_version, attempt_route_binding_digest, execution_attempt_id,
    gateway_route_snapshot_ref, binding_body, bound_at)
VALUES (@attempt_route_binding_ref, @attempt_route_binding_schema_version, @attempt_route_binding_digest_algorithm_version,
    @attempt_route_binding_digest, @execution_attempt_id, @gateway_route_snapshot_ref, @binding_body, @bound_at);

-- name: BindingByAttempt :one
SELECT b.binding_body, s.snapshot_body
  FROM gateway.attempt_route_bindings b
  JOIN gateway.route_snapshots s ON s.gateway_route_snapshot_ref = b.gateway_route_snapshot_ref
 WHERE b.execution_attempt_id = @execution_attempt_id;

-- name: RejectionInsert :exec
INSERT INTO gateway.pre_binding_rejections (gateway_pre_binding_rejection_fact_ref,
    gateway_pre_binding_rejection_fact_schema_version, gateway_pre_binding_rejection_fact_digest_algorithm_version,
    gateway_pre_binding_rejection_fact_digest, execution_attempt_id, rejection_reason_code, fact_body, rejected_at)
VALUES (@gateway_pre_binding_rejection_fact_ref, @gateway_pre_binding_rejection_fact_schema_version,
    @gateway_pre_binding_rejection_fact_digest_algorithm_version, @gateway_pre_binding_rejection_fact_digest,
    @execution_attempt_id, @rejection_reason_code, @fact_body, @rejected_at);

-- name: RejectionByAttempt :one
SELECT fact_body FROM gateway.pre_binding_rejections WHERE execution_attempt_id = @execution_attempt_id;

-- name: EvidenceInsert :exec
INSERT INTO gateway.provider_evidence (provider_evidence_ref, provider_evidence_schema_version,
    provider_evidence_digest_algorithm_version, provider_evidence_digest, execution_attempt_id, provider_evidence_kind,
    evidence_dimension_key, evidence_body, observed_at)
VALUES (@provider_evidence_ref, @provider_evidence_schema_version, @provider_evidence_digest_algorithm_version,
    @provider_evidence_digest, @execution_attempt_id, @provider_evidence_kind, @evidence_dimension_key, @evidence_body, @observed_at);

-- name: CurrentForUpdate :one
SELECT c.current_availability_ref, c.current_state_version, s.snapshot_body
  FROM gateway.availability_currents c
  JOIN gateway.availability_snapshots s ON s.current_availability_ref = c.current_availability_ref
 WHERE c.chain_id = @chain_id
   FOR UPDATE OF c;

-- name: SnapshotInsert :exec
INSERT INTO gateway.availability_snapshots (current_availability_ref, current_availability_schema_version,
    current_availability_digest_algorithm_version, current_availability_digest, chain_id, execution_attempt_id,
    state_version, availability_state, provider_evidence_ref, snapshot_body, event_id, recorded_at)
VALUES (@current_availability_ref, @current_availability_schema_version, @current_availability_digest_algorithm_version,
    @current_availability_digest, @chain_id, @execution_attempt_id, @state_version, @availability_state,
    sqlc.narg(provider_evidence_ref), @snapshot_body, @event_id, @recorded_at);

-- name: CurrentInsert :execrows
INSERT INTO gateway.availability_currents (chain_id, execution_attempt_id, gateway_deployment_id, provider_evidence_kind,
    evidence_dimension_key, current_availability_ref, current_state_version)
VALUES (@chain_id, @execution_attempt_id, @gateway_deployment_id, @provider_evidence_kind, @evidence_dimension_key,
    @current_availability_ref, 1)
ON CONFLICT (chain_id) DO NOTHING;

-- name: CurrentCAS :execrows
UPDATE gateway.availability_currents
   SET current_availability_ref = @current_availability_ref, current_state_version = current_state_version + 1
 WHERE chain_id = @chain_id AND current_state_version = @expected_state_version;

-- name: EvidenceBodyByRef :one
-- readGatewayProviderEvidence@1: the stored evidence body (primary key).
SELECT evidence_body FROM gateway.provider_evidence WHERE provider_evidence_ref = @provider_evidence_ref;

-- name: SnapshotBodyByRef :one
-- readGatewayAvailabilitySnapshot@1: the stored snapshot body (its ref is unique).
SELECT snapshot_body FROM gateway.availability_snapshots WHERE current_availability_ref = @current_availability_ref;

-- name: ValidationReceiptByOperation :one
-- The stored receipt of a validation operation (primary key).
SELECT receipt_body FROM gateway.availability_validation_receipts WHERE validation_operation_id = @validation_operation_id;

-- name: AvailabilityCurrentForShare :one
-- The chain's Current of a validated snapshot (two primary-key lookups),
-- locked FOR SHARE so a concurrent advance waits for the receipt's commit.
SELECT c.current_availability_ref, c.current_state_version, s.snapshot_body
  FROM gateway.availability_snapshots v
  JOIN gateway.availability_currents c ON c.chain_id = v.chain_id
  JOIN gateway.availability_snapshots s ON s.current_availability_ref = c.current_availability_ref
 WHERE v.current_availability_ref = @validated_availability_ref
   FOR SHARE OF c;

-- name: ValidationReceiptInsert :execrows
INSERT INTO gateway.availability_validation_receipts (validation_operation_id, receipt_ref, receipt_schema_version,
    receipt_digest_algorithm_version, receipt_digest, purpose, validated_availability_ref, result_state, receipt_body, validated_at)
VALUES (@validation_operation_id, @receipt_ref, @receipt_schema_version, @receipt_digest_algorithm_version, @receipt_digest,
    @purpose, @validated_availability_ref, @result_state, @receipt_body, @validated_at)
ON CONFLICT (validation_operation_id) DO NOTHING;

-- name: EvidenceConflictInsert :exec
-- GatewayEvidenceConflictFact@1, insert-or-compare on the contested
-- evidence: a second insert for the same evidence does nothing (the caller
-- reads the first back and compares).
INSERT INTO gateway.evidence_conflict_facts (gateway_evidence_conflict_fact_ref, gateway_evidence_conflict_fact_schema_version,
    gateway_evidence_conflict_fact_digest_algorithm_version, gateway_evidence_conflict_fact_digest, provider_evidence_ref,
    execution_attempt_id, fact_body, detected_at)
VALUES (@gateway_evidence_conflict_fact_ref, @gateway_evidence_conflict_fact_schema_version,
    @gateway_evidence_conflict_fact_digest_algorithm_version, @gateway_evidence_conflict_fact_digest, @provider_evidence_ref,
    @execution_attempt_id, @fact_body, @detected_at)
ON CONFLICT (provider_evidence_ref) DO NOTHING;

-- name: EvidenceConflictByEvidence :one
-- The Gateway's conflict fact about one evidence (unique key).
SELECT fact_body FROM gateway.evidence_conflict_facts WHERE provider_evidence_ref = @provider_evidence_ref;
