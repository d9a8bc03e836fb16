-- Restore drill only: history is loaded exactly as archived, not appended (superuser, scratch database).
SET LOCAL session_replication_role = replica
