-- Outbox-side completeness of one producer database, event level: how many
-- events there are, how many are published, and the two ways published_at
-- can disagree with the mandatory deliveries (both must be zero).
-- Loaded, not sqlc: sqlc cannot type the nullable min() (it answers interface{}).
SELECT
  (SELECT count(*) FROM outbox.outbox_events) AS events,
  (SELECT count(*) FROM outbox.outbox_events WHERE published_at IS NOT NULL) AS published,
  (SELECT count(*) FROM outbox.outbox_events e
    WHERE e.published_at IS NOT NULL
      AND EXISTS (SELECT 1 FROM outbox.outbox_deliveries d
                   WHERE d.event_id = e.event_id AND d.mandatory AND d.status <> 'acknowledged')) AS published_with_open_mandatory,
  (SELECT count(*) FROM outbox.outbox_events e
    WHERE e.published_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM outbox.outbox_deliveries d
                       WHERE d.event_id = e.event_id AND d.mandatory AND d.status <> 'acknowledged')) AS unpublished_all_acknowledged,
  (SELECT min(created_at) FROM outbox.outbox_events WHERE published_at IS NULL) AS oldest_unpublished_created_at
