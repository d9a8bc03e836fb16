-- name: PendingColumns (fragment)
p.billing_reservation_id::text, p.run_id::text, p.billing_account_id::text,
p.run_admission_manifest_ref, p.run_admission_manifest_schema_version,
p.run_admission_manifest_digest_algorithm_version, p.run_admission_manifest_digest,
p.tenant_kind, p.tenant_id::text, p.workspace_id::text, p.project_id::text, p.correlation_id::text,
p.causation_id::text, p.operation_id::text, p.wallet_event_id::text, p.wallet_occurred_at,
p.reservation_economic_identity, p.reserved_amount, p.finalization_event_id::text, p.billing_finalization_decision,
p.received_at
