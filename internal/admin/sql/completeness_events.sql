-- Outbox-side completeness of one producer database, event level: how many
-- events there are, how many are published, and the two ways published_at
-- can disagree with the mandatory deliveries (both must be zero).
SELECT
  (SELECT count(*) FROM outbox.outbox_events),
  (SELECT count(*) FROM outbox.outbox_events WHERE published_at IS NOT NULL),
  (SELECT count(*) FROM outbox.outbox_events e
    WHERE e.published_at IS NOT NULL
      AND EXISTS (SELECT 1 FROM outbox.outbox_deliveries d
                   WHERE d.event_id = e.event_id AND d.mandatory AND d.status <> 'acknowledged')),
  (SELECT count(*) FROM outbox.outbox_events e
    WHERE e.published_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM outbox.outbox_deliveries d
                       WHERE d.event_id = e.event_id AND d.mandatory AND d.status <> 'acknowledged')),
  (SELECT min(created_at) FROM outbox.outbox_events WHERE published_at IS NULL)
