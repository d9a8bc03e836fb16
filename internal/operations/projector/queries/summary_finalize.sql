-- name: SummaryFinalize :exec
-- Records the absorbing Billing finalization on a linked reservation.
UPDATE operations.operation_summaries
   SET reservation_state = 'finalized', finalization_event_id = @finalization_event_id,
       finalization_occurred_at = @finalization_occurred_at,
       billing_finalization_decision = @billing_finalization_decision, settled_amount = @settled_amount,
       released_amount = @released_amount, updated_at = @now
 WHERE projection_name = @projection_name AND projection_version = @projection_version AND run_id = @run_id
   AND reservation_state = 'reserved';
