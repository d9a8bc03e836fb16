-- Every settlement transition with its amount (read only).
SELECT transition_ref, settlement_dimension_id::text, to_settlement_state_revision, billing_reservation_id::text,
       transition_kind, transition_amount::text
  FROM billing.settlement_transitions
 ORDER BY settlement_dimension_id, to_settlement_state_revision;
