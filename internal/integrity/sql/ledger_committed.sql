-- Every committed finalization with the amounts it posts (read only).
SELECT committed_ref, billing_reservation_id::text, decision, reserved_amount::text, settled_amount::text,
       released_amount::text, posting_group_id::text, committed_body
  FROM billing.finalization_committed
 ORDER BY committed_ref;
