-- name: ReservationState
-- The reservation's state (primary key lookup): the scenario sends a
-- post-finality correction only once it is settled or released.
SELECT state FROM billing.reservation_states WHERE billing_reservation_id = $1;
