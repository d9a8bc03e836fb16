-- First statement of every consumer transaction: the transaction-scoped
-- advisory lock on the receipt key (serializes concurrent deliveries of one
-- event; waits are bounded by lock_timeout) and the transaction timestamp,
-- the database time a receipt's own time field takes.
SELECT transaction_timestamp() AS now
  FROM pg_advisory_xact_lock(hashtextextended(@lock_key, 0))
