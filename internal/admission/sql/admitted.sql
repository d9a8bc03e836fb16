-- name: Admitted
-- Everything an admission created, by run id (the replay answer).
-- $1 run id.
SELECT r.run_id::text, r.admission_operation_id::text, r.billing_account_id::text, r.billing_reservation_id::text,
       r.run_admission_manifest_ref, r.run_admission_manifest_schema_version,
       r.run_admission_manifest_digest_algorithm_version, r.run_admission_manifest_digest,
       r.run_created_event_id::text, s.wallet_reserved_event_id::text, s.reserved_credits,
       f.billing_finalization_fence_id::text, w.work_generation, w.billing_finalization_operation_id::text,
       w.work_ref, w.work_schema_version, w.work_digest_algorithm_version, w.work_digest, w.work_state, w.waiting_reason,
       r.correlation_id::text, r.admitted_at
  FROM admission.runs r
  JOIN admission.reservations s ON s.run_id = r.run_id
  JOIN admission.billing_finalization_fences f ON f.run_id = r.run_id
  JOIN admission.billing_finalization_works w
    ON w.billing_finalization_fence_id = f.billing_finalization_fence_id AND w.work_generation = 1
 WHERE r.run_id = $1
