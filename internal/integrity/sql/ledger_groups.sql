-- Every posting group of the billing ledger (read only).
SELECT posting_group_id::text, billing_reservation_id::text, group_kind, economic_identity
  FROM billing.ledger_posting_groups
 ORDER BY created_at, posting_group_id;
