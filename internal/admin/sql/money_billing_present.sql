-- name: MoneyBillingPresent
-- Whether this database holds the billing line's overview tables (only the
-- core database does); the overview says "not installed" otherwise.
SELECT to_regclass('billing.reservation_states') IS NOT NULL
   AND to_regclass('billing.billing_finalization_fences') IS NOT NULL
   AND to_regclass('billing.ledger_postings') IS NOT NULL
   AND to_regclass('billing.late_settlement_exposures') IS NOT NULL AS present
