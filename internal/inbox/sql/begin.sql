-- name: Begin
-- First statement of every consumer transaction: the transaction-scoped
-- advisory lock on the receipt key (serializes concurrent deliveries of one
-- event; waits are bounded by lock_timeout) and the transaction timestamp,
-- the database time a receipt's own time field takes.
-- $1 receipt lock key text.
SELECT pg_advisory_xact_lock(hashtextextended($1, 0)), transaction_timestamp()
