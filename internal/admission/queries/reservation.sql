-- name: ReservationInsert :exec
INSERT INTO admission.reservations (billing_reservation_id, billing_account_id, run_id, economic_identity_kind,
    reserved_credits, state, wallet_reserved_event_id, created_at)
VALUES (@billing_reservation_id, @billing_account_id, @run_id, 'credits', @reserved_credits, 'reserved',
    @wallet_reserved_event_id, @created_at);
