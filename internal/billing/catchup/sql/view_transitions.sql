-- One reservation's settlement transitions, by dimension and revision.
SELECT settlement_dimension_id::text AS settlement_dimension_id, from_settlement_state_revision, to_settlement_state_revision,
       transition_kind, transition_amount::text AS transition_amount, settled_amount_before::text AS settled_amount_before,
       settled_amount_after::text AS settled_amount_after, settlement_input_state_version, transition_ref,
       event_id::text AS event_id, committed_at
FROM billing.settlement_transitions
WHERE billing_reservation_id = @billing_reservation_id
ORDER BY settlement_dimension_id, from_settlement_state_revision
