-- name: QuarantineRecent :many
-- The most recent quarantines with their reason, newest first, bounded.
SELECT q.destination, q.event_id, e.event_type, e.schema_version, q.reason, q.quarantined_at,
       q.attempt_id, d.attempt_count, d.last_error_code, q.case_id, q.acknowledged_at
  FROM outbox.outbox_quarantine q
  JOIN outbox.outbox_events e ON e.event_id = q.event_id
  JOIN outbox.outbox_deliveries d ON d.event_id = q.event_id AND d.destination = q.destination
 ORDER BY q.quarantined_at DESC, q.event_id, q.destination
 LIMIT @row_limit;
