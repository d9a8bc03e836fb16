-- name: OwnerConflictsCatchUp
-- Issue 32 on the core database: the catch-up fences that recorded
-- BillingSettlementCatchUpWorkAttemptBlocked@1 on Metering's conflict fact,
-- and how many of them are caught_up now.
SELECT
  (SELECT count(DISTINCT settlement_dimension_id) FROM billing.settlement_catch_up_blocks),
  (SELECT count(DISTINCT b.settlement_dimension_id) FROM billing.settlement_catch_up_blocks b
     JOIN billing.settlement_catch_up_fences f ON f.settlement_dimension_id = b.settlement_dimension_id
    WHERE f.coordination_state = 'caught_up');
