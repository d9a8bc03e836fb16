-- The dead tuples of one table after VACUUM.
SELECT n_dead_tup FROM pg_catalog.pg_stat_user_tables WHERE schemaname = @schema AND relname = @name
