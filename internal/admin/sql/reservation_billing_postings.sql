-- name: ReservationBillingPostings
-- The reservation's ledger postings (reservation index), in posting order.
SELECT g.group_kind, p.posting_group_id, p.line_no, p.account_kind, p.direction, p.amount::text AS amount,
       p.economic_identity, p.posted_at
  FROM billing.ledger_postings p
  JOIN billing.ledger_posting_groups g ON g.posting_group_id = p.posting_group_id
 WHERE p.billing_reservation_id = @reservation_id
 ORDER BY p.posted_at, p.posting_group_id, p.line_no;
