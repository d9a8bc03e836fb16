-- Moves the fence one revision (compare-and-set on the revision the caller
-- read under the lock; the triggers check the graph and, for the worker,
-- that its fencing token is the generation's latest attempt; the consumer's
-- reopen passes no token).
UPDATE billing.settlement_catch_up_fences
SET fence_revision = fence_revision + 1, settlement_state_revision = @settlement_state_revision,
    settled_amount = @settled_amount::numeric, last_evaluated_ref = @last_evaluated_ref,
    last_evaluated_schema_version = @last_evaluated_schema_version,
    last_evaluated_digest_algorithm_version = @last_evaluated_digest_algorithm_version,
    last_evaluated_digest = @last_evaluated_digest, last_evaluated_state_version = @last_evaluated_state_version,
    last_event_id = @last_event_id, coordination_state = @coordination_state,
    active_work_generation = @active_work_generation,
    caught_up_receipt_ref = NULLIF(@caught_up_receipt_ref::text, ''),
    caught_up_receipt_schema_version = NULLIF(@caught_up_receipt_schema_version::text, ''),
    caught_up_receipt_digest_algorithm_version = NULLIF(@caught_up_receipt_digest_algorithm_version::text, ''),
    caught_up_receipt_digest = NULLIF(@caught_up_receipt_digest::text, ''),
    attempt_fencing_token = NULLIF(@attempt_fencing_token::text, '')::uuid,
    updated_at = @now
WHERE settlement_dimension_id = @settlement_dimension_id AND fence_revision = @expected_fence_revision
RETURNING fence_revision
