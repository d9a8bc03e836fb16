-- Every posting line, in posting order (read only). Balances are derived
-- from these lines, never read from billing.ledger_balances.
SELECT posting_group_id::text, line_no, billing_reservation_id::text, billing_account_id::text,
       economic_identity, account_kind, direction, amount::text
  FROM billing.ledger_postings
 ORDER BY posting_group_id, line_no;
