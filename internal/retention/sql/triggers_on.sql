SET LOCAL session_replication_role = origin
