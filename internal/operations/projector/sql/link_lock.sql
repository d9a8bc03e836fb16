-- name: LinkLock
-- Transaction-scoped advisory locks on the run and reservation identities an
-- event links, taken in array order (run first, then reservation) by every
-- event that reads or writes the Run ↔ Reservation link, so Wallet-first and
-- Run-first projections of one operation never miss each other (OPS-3).
-- Loaded, not sqlc: sqlc cannot type the set-returning unnest over an argument.
SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0))) AS locked FROM unnest(@keys::text[]) AS t(k)
