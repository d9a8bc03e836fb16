-- name: AttemptsOfEvents :many
-- The full attempt history of the given events: every start joined with its
-- finish (none while the attempt is in flight), in start order.
SELECT s.event_id, s.destination, s.attempt_id, s.started_at,
       f.finished_at, f.outcome, f.retry_disposition, f.normalized_error_code, f.sanitized_error_ref
  FROM outbox.outbox_delivery_attempt_starts s
  LEFT JOIN outbox.outbox_delivery_attempt_finishes f ON f.attempt_id = s.attempt_id
 WHERE s.event_id = ANY(@event_ids::uuid[])
 ORDER BY s.event_id, s.destination, s.started_at, s.attempt_id
 LIMIT @row_limit;
