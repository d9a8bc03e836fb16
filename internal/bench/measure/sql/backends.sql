-- The backends connected to the measured databases.
SELECT pid, datname FROM pg_catalog.pg_stat_activity WHERE datname = ANY(@databases)
