-- name: EndState :one
-- End-state check of a run: every delivery acknowledged once, every event
-- published, one acknowledged finish per delivery, retries and quarantines.
SELECT
  (SELECT count(*) FROM outbox.outbox_deliveries) AS deliveries,
  (SELECT count(*) FROM outbox.outbox_deliveries WHERE status = 'acknowledged') AS acknowledged,
  (SELECT count(*) FROM outbox.outbox_deliveries WHERE attempt_count > 1) AS retried,
  (SELECT count(*) FROM outbox.outbox_events) AS events,
  (SELECT count(*) FROM outbox.outbox_events WHERE published_at IS NOT NULL) AS published,
  (SELECT count(*) FROM outbox.outbox_delivery_attempt_finishes WHERE outcome = 'acknowledged') AS acknowledged_finishes,
  (SELECT count(*) FROM outbox.outbox_quarantine) AS quarantined;
