-- Restore drill: the target must be a scratch database — no event and no
-- retention run (the source database itself has runs).
SELECT (SELECT count(*) FROM outbox.outbox_events) AS events,
       (SELECT count(*) FROM outbox.retention_runs) AS runs
