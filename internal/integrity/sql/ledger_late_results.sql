-- Every late settlement command result with the posting group it names
-- and its adjustment (read only).
SELECT command_operation_id::text, settlement_dimension_id::text, billing_reservation_id::text, posting_group_id::text,
       adjustment_amount::text
  FROM billing.late_settlement_command_results
 ORDER BY committed_at, command_operation_id;
