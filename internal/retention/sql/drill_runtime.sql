-- Restore drill: where it ran — the scratch database, its server version and
-- its time (database time, never the process clock).
SELECT current_database() AS database, current_setting('server_version') AS server_version, clock_timestamp() AS now
