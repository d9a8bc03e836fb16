-- name: SummaryColumns (fragment)
s.run_id::text, s.operation_id::text, s.correlation_id::text, s.tenant_kind, s.tenant_id::text, s.workspace_id::text,
s.project_id::text, s.billing_account_id::text, s.billing_reservation_id::text,
s.run_admission_manifest_ref, s.run_admission_manifest_schema_version,
s.run_admission_manifest_digest_algorithm_version, s.run_admission_manifest_digest,
s.run_event_id::text, s.run_occurred_at, s.reservation_state, s.reservation_event_id::text, s.reservation_occurred_at,
s.reservation_economic_identity, s.reserved_amount, s.finalization_event_id::text, s.finalization_occurred_at,
s.billing_finalization_decision, s.settled_amount, s.released_amount, s.created_at, s.updated_at
