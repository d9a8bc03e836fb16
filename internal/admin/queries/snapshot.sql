-- name: Snapshot :one
-- The snapshot every admin read reports as "as of": the transaction's
-- database time (now() is fixed for the whole READ ONLY transaction) and
-- the database the pool is connected to.
SELECT now()::timestamptz AS as_of, current_database()::text AS database;
