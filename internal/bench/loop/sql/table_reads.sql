-- name: TableReads
-- Rows the database's user tables handed out: tuples read by sequential
-- scans and live rows fetched by index scans (catalog reads excluded).
SELECT coalesce(sum(seq_tup_read), 0)::bigint AS seq_tup_read,
       coalesce(sum(idx_tup_fetch), 0)::bigint AS idx_tup_fetch
  FROM pg_catalog.pg_stat_user_tables
