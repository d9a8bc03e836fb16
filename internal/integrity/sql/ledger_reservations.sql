-- Every reservation's state (read only).
SELECT billing_reservation_id::text, billing_account_id::text, economic_identity, reserved_amount::text,
       state, settled_amount::text, released_amount::text, committed_ref
  FROM billing.reservation_states
 ORDER BY billing_reservation_id;
