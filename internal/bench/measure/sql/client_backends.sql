-- How many client sessions other than the excluded ones are still
-- connected to the databases.
SELECT count(*) FROM pg_catalog.pg_stat_activity
 WHERE datname = ANY(@databases) AND NOT (pid = ANY(@exclude)) AND backend_type = 'client backend'
