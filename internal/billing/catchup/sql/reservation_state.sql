-- The reservation's state (a transition posts only to a settled reservation;
-- the database's controlled writer checks it again).
SELECT state
FROM billing.reservation_states
WHERE billing_reservation_id = @billing_reservation_id
