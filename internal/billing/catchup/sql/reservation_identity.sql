-- The reservation's economic identity text and state (a transition posts
-- only to a finalized reservation, on its identity).
SELECT economic_identity, state
FROM billing.reservation_states
WHERE billing_reservation_id = @billing_reservation_id
