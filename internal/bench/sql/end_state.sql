-- End-state check of a run: every delivery acknowledged once, every event
-- published, one acknowledged finish per delivery, retries and quarantines.
SELECT
  (SELECT count(*) FROM outbox.outbox_deliveries),
  (SELECT count(*) FROM outbox.outbox_deliveries WHERE status = 'acknowledged'),
  (SELECT count(*) FROM outbox.outbox_deliveries WHERE attempt_count > 1),
  (SELECT count(*) FROM outbox.outbox_events),
  (SELECT count(*) FROM outbox.outbox_events WHERE published_at IS NOT NULL),
  (SELECT count(*) FROM outbox.outbox_delivery_attempt_finishes WHERE outcome = 'acknowledged'),
  (SELECT count(*) FROM outbox.outbox_quarantine)
