-- name: DecisionInsert
INSERT INTO billing.finalization_decisions
  (decision_ref, decision_schema_version, decision_digest_algorithm_version, decision_digest,
   billing_finalization_fence_id, manifest_ref, bundle_ref, decision, reason_code,
   reserved_amount, settled_amount, released_amount, decision_body)
VALUES (@ref, @schema_version, @digest_algorithm_version, @digest,
        @fence_id, @manifest_ref, @bundle_ref, @decision, @reason_code,
        @reserved_amount::numeric, @settled_amount::numeric, @released_amount::numeric, @body)
ON CONFLICT (decision_ref) DO NOTHING;
