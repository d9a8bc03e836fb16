-- name: DatabaseStats
-- The transaction and tuple counters of the measured databases (read on a
-- session of the maintenance database: pg_stat_database covers the server).
SELECT datname, xact_commit, xact_rollback, tup_returned, tup_fetched
  FROM pg_catalog.pg_stat_database
 WHERE datname = ANY(@databases)
