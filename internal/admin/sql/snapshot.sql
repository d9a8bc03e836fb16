-- The snapshot every admin read reports as "as of": the transaction's
-- database time (now() is fixed for the whole READ ONLY transaction) and
-- the database the pool is connected to.
SELECT now(), current_database()
