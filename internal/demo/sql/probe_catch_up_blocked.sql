-- name: ProbeCatchUpBlocked
-- A disputed attempt's wait (issue 32): has a catch-up fence of one of the
-- dimensions in $1 recorded BillingSettlementCatchUpWorkAttemptBlocked@1?
SELECT EXISTS (SELECT 1 FROM billing.settlement_catch_up_blocks WHERE settlement_dimension_id = ANY ($1::uuid[]));
