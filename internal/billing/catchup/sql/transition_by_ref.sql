-- readBillingSettlementTransition: one transition by its exact ref.
SELECT settlement_dimension_id, from_settlement_state_revision, event_id, event_envelope_sha256, transition_body
FROM billing.settlement_transitions
WHERE transition_ref = @transition_ref
