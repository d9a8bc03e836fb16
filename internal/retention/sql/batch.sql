-- The next batch of closed events an archive run takes (RET-1): created
-- before the run's cutoff, published, every delivery acknowledged, no
-- quarantine row, no legacy adoption record — the plan's class "closed".
-- Keyset on the primary key from the previous batch's last id, so a run
-- walks the table once; outbox.retention_archive re-checks every event.
SELECT e.event_id
  FROM outbox.outbox_events e
 WHERE e.event_id > @after::uuid
   AND e.created_at < @cutoff::timestamptz
   AND e.published_at IS NOT NULL
   AND NOT EXISTS (SELECT 1 FROM outbox.outbox_quarantine q WHERE q.event_id = e.event_id)
   AND NOT EXISTS (SELECT 1 FROM outbox.outbox_deliveries d WHERE d.event_id = e.event_id AND d.status <> 'acknowledged')
   AND NOT EXISTS (SELECT 1 FROM outbox.legacy_adoptions a WHERE a.event_id = e.event_id)
 ORDER BY e.event_id
 LIMIT @batch_size::integer
