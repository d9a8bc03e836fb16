-- name: ReservationBillingPresent
-- Whether this database holds the billing line (only the core database does).
SELECT to_regclass('billing.reservation_states') IS NOT NULL
   AND to_regclass('billing.finalization_decisions') IS NOT NULL;
