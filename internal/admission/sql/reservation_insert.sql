-- name: ReservationInsert
-- $1 reservation id, $2 account id, $3 run id, $4 reserved credits,
-- $5 wallet.reserved event id, $6 created at.
INSERT INTO admission.reservations (billing_reservation_id, billing_account_id, run_id, economic_identity_kind,
    reserved_credits, state, wallet_reserved_event_id, created_at)
VALUES ($1, $2, $3, 'credits', $4, 'reserved', $5, $6)
