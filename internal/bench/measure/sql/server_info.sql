-- The server version and commit durability the results were measured with.
SELECT current_setting('server_version') AS server_version, current_setting('synchronous_commit') AS synchronous_commit
