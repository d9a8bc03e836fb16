-- The write and scan counters of every user table of the database.
SELECT t.schemaname || '.' || t.relname AS table_name, t.n_tup_ins, t.n_tup_upd, t.n_tup_hot_upd, t.n_tup_del,
       t.n_dead_tup, coalesce(t.seq_scan, 0) AS seq_scan, coalesce(t.seq_tup_read, 0) AS seq_tup_read,
       coalesce(t.idx_scan, 0) AS idx_scan, coalesce(i.idx_tup_read, 0) AS idx_tup_read
  FROM pg_catalog.pg_stat_user_tables t
  LEFT JOIN (SELECT relid, sum(idx_tup_read)::bigint AS idx_tup_read FROM pg_catalog.pg_stat_user_indexes GROUP BY relid) i
 USING (relid)
