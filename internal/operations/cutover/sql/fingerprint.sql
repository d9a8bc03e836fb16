-- name: Fingerprint
-- The content of one projection version, independent of build order and of
-- the version itself: receipts by event and envelope digest (not the receipt
-- digest, whose body names the version, ref and time), aggregates, the
-- mutation log (without effect and times of application), summaries
-- (without row times), the identifier index, reservations still waiting for
-- their Run, finalization cases (without the event and time of the
-- transaction that materialised or closed them: an ordering's path, not its
-- end state), case resolutions and successors still pending, unresolved gaps
-- and unsupported records, late settlement cases (without the event and
-- time that opened them) and their exposures. SHA-256 over the sorted row
-- texts.
SELECT count(*) FILTER (WHERE x LIKE 'receipt|%') AS receipts,
       encode(sha256(convert_to(COALESCE(string_agg(x, E'\n' ORDER BY x), ''), 'UTF8')), 'hex') AS sha256
FROM (
  SELECT concat_ws('|', 'receipt', event_id, event_type, event_schema_version, event_envelope_digest_algorithm_version, event_envelope_sha256)
    FROM operations.applied_receipts WHERE projection_name = @projection_name AND projection_version = @projection_version
  UNION ALL
  SELECT concat_ws('|', 'aggregate', aggregate_type, aggregate_id, applied_revision, last_event_id)
    FROM operations.projection_aggregates WHERE projection_name = @projection_name AND projection_version = @projection_version
  UNION ALL
  SELECT concat_ws('|', 'event', event_id, event_type, event_schema_version, aggregate_type, aggregate_id, aggregate_revision,
         run_id, billing_reservation_id, correlation_id, causation_id, operation_id, occurred_at)
    FROM operations.projected_events WHERE projection_name = @projection_name AND projection_version = @projection_version
  UNION ALL
  SELECT concat_ws('|', 'summary', run_id, operation_id, correlation_id, tenant_kind, tenant_id, workspace_id, project_id,
         billing_account_id, billing_reservation_id, run_admission_manifest_ref, run_admission_manifest_schema_version,
         run_admission_manifest_digest_algorithm_version, run_admission_manifest_digest, run_event_id, run_occurred_at,
         reservation_state, reservation_event_id, reservation_occurred_at, reservation_economic_identity, reserved_amount,
         finalization_event_id, finalization_occurred_at, billing_finalization_decision, settled_amount, released_amount)
    FROM operations.operation_summaries WHERE projection_name = @projection_name AND projection_version = @projection_version
  UNION ALL
  SELECT concat_ws('|', 'index', identifier_kind, identifier_value, run_id)
    FROM operations.identifier_index WHERE projection_name = @projection_name AND projection_version = @projection_version
  UNION ALL
  SELECT concat_ws('|', 'pending', billing_reservation_id, run_id, wallet_event_id, finalization_event_id)
    FROM operations.pending_unlinked_reservations
   WHERE projection_name = @projection_name AND projection_version = @projection_version AND status = 'pending'
  UNION ALL
  SELECT concat_ws('|', 'case', reconciliation_case_ref, billing_finalization_fence_id, reconciliation_generation,
         case_identity_ref, case_identity_schema_version, case_identity_digest_algorithm_version, case_identity_digest,
         case_request_operation_id, predecessor_reconciliation_case_ref, predecessor_generation, predecessor_case_identity_ref,
         predecessor_case_identity_schema_version, predecessor_case_identity_digest_algorithm_version,
         predecessor_case_identity_digest, billing_reservation_id, billing_account_id, run_id, tenant_kind, tenant_id,
         workspace_id, project_id, decision_ref, decision_schema_version, decision_digest_algorithm_version, decision_digest,
         triggering_work_ref, triggering_work_schema_version, triggering_work_digest_algorithm_version, triggering_work_digest,
         triggering_work_generation, billing_finalization_operation_id, reconciliation_reason_code, request_event_id,
         request_event_envelope_digest_algorithm_version, request_event_envelope_sha256, requested_at, state,
         resolution_event_id, resolution_event_envelope_digest_algorithm_version, resolution_event_envelope_sha256,
         resolution_operation_id, resolution_applied_ref, resolution_applied_schema_version,
         resolution_applied_digest_algorithm_version, resolution_applied_digest, resolution_actor_workforce_principal_id,
         resolved_at)
    FROM operations.finalization_cases WHERE projection_name = @projection_name AND projection_version = @projection_version
  UNION ALL
  SELECT concat_ws('|', 'pending_case_resolution', reconciliation_case_ref, reconciliation_generation, resolution_event_id,
         resolution_event_envelope_sha256)
    FROM operations.pending_finalization_case_resolutions
   WHERE projection_name = @projection_name AND projection_version = @projection_version AND status = 'pending'
  UNION ALL
  SELECT concat_ws('|', 'pending_case_successor', reconciliation_case_ref, reconciliation_generation, request_event_id,
         request_event_envelope_sha256)
    FROM operations.pending_finalization_case_successors
   WHERE projection_name = @projection_name AND projection_version = @projection_version AND status = 'pending'
  UNION ALL
  SELECT concat_ws('|', 'late_case', reconciliation_case_ref, settlement_dimension_id, case_generation, case_identity_ref,
         case_identity_schema_version, case_identity_digest_algorithm_version, case_identity_digest, case_request_operation_id,
         billing_reservation_id, billing_account_id, run_id, run_step_id, execution_attempt_id, charge_dimension_key,
         tenant_kind, tenant_id, workspace_id, project_id, state, resolution_event_id)
    FROM operations.late_settlement_cases WHERE projection_name = @projection_name AND projection_version = @projection_version
  UNION ALL
  SELECT concat_ws('|', 'late_case_exposure', late_settlement_exposure_id, reconciliation_case_ref, exposure_ref,
         exposure_schema_version, exposure_digest_algorithm_version, exposure_digest, exposure_amount, request_event_id,
         request_event_envelope_sha256, requested_at, resolution_event_id, resolution_event_envelope_sha256, resolution_operation_id,
         resolution_source, resolution_applied_ref, resolution_applied_digest, resolved_at)
    FROM operations.late_settlement_case_exposures WHERE projection_name = @projection_name AND projection_version = @projection_version
  UNION ALL
  SELECT concat_ws('|', 'gap', waiting_event_id, aggregate_type, aggregate_id, waiting_revision)
    FROM operations.revision_gaps WHERE projection_name = @projection_name AND projection_version = @projection_version AND resolved_at IS NULL
  UNION ALL
  SELECT concat_ws('|', 'unsupported', event_id, event_type)
    FROM operations.unsupported_events WHERE projection_name = @projection_name AND projection_version = @projection_version AND resolved_at IS NULL
) t(x)
