-- name: MoneyBillingAccounts
-- The ledger's balance per account kind over every reservation, from the
-- owner's view billing.ledger_balances (its sign convention). A scan of
-- billing.ledger_postings: on demand only.
SELECT account_kind, COALESCE(sum(balance), 0)::text AS balance
  FROM billing.ledger_balances
 GROUP BY account_kind
 ORDER BY account_kind
