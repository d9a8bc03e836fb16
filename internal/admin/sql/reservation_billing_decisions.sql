-- name: ReservationBillingDecisions
-- The decision chain of the reservation's fence: every evaluation's
-- decision with its manifest and bundle (fence index), oldest first.
SELECT d.decision_ref, d.decision_digest, d.decision, d.reason_code, d.settled_amount::text AS settled_amount,
       d.released_amount::text AS released_amount, d.manifest_ref, m.manifest_digest, m.dimension_count,
       m.target_total::text AS target_total, d.bundle_ref, d.recorded_at
  FROM billing.billing_finalization_fences f
  JOIN billing.finalization_decisions d ON d.billing_finalization_fence_id = f.billing_finalization_fence_id
  JOIN billing.finalization_input_manifests m ON m.manifest_ref = d.manifest_ref
 WHERE f.billing_reservation_id = @reservation_id
 ORDER BY d.recorded_at, d.decision_ref;
