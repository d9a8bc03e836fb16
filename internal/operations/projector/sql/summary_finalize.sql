-- name: SummaryFinalize
-- Records the absorbing Billing finalization on a linked reservation.
-- $1 projection name, $2 projection version, $3 run id, $4 event id,
-- $5 occurred at, $6 decision, $7 settled, $8 released, $9 now.
UPDATE operations.operation_summaries
   SET reservation_state = 'finalized', finalization_event_id = $4, finalization_occurred_at = $5,
       billing_finalization_decision = $6, settled_amount = $7, released_amount = $8, updated_at = $9
 WHERE projection_name = $1 AND projection_version = $2 AND run_id = $3 AND reservation_state = 'reserved'
