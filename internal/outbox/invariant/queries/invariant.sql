-- name: InvariantCounts :one
-- The outbox's end-state and safety proofs in one snapshot: three totals for
-- context, then one violation count per invariant (each must be zero).
-- invariant.go names each column's check and says when it must hold.
SELECT
  (SELECT count(*) FROM outbox.outbox_events)::bigint AS events,
  (SELECT count(*) FROM outbox.outbox_deliveries)::bigint AS deliveries,
  (SELECT count(*) FROM outbox.outbox_deliveries WHERE attempt_count > 1)::bigint AS retried_deliveries,
  -- no_lost_delivery
  (SELECT count(*) FROM outbox.outbox_deliveries WHERE status <> 'acknowledged')::bigint AS unacknowledged_deliveries,
  -- every_event_has_its_deliveries (an event whose frozen definition has no
  -- mandatory member for its pair, e.g. a published legacy event adopted
  -- under the Bootstrap Delivery Set Version, OB-BOOT-1, has none)
  (SELECT count(*) FROM outbox.outbox_events e
    WHERE NOT EXISTS (SELECT 1 FROM outbox.outbox_deliveries d WHERE d.event_id = e.event_id)
      AND EXISTS (SELECT 1 FROM outbox.delivery_set_members m
                   WHERE m.delivery_set_version = e.delivery_set_version AND m.event_type = e.event_type
                     AND m.schema_version = e.schema_version AND m.mandatory))::bigint AS events_without_deliveries,
  -- no_double_ack
  (SELECT count(*) FROM (
    SELECT s.event_id, s.destination FROM outbox.outbox_delivery_attempt_starts s
    JOIN outbox.outbox_delivery_attempt_finishes f USING (attempt_id)
    WHERE f.outcome = 'acknowledged' GROUP BY 1, 2 HAVING count(*) > 1) x)::bigint AS deliveries_acknowledged_twice,
  -- ack_matches_finish
  (SELECT count(*) FROM outbox.outbox_deliveries d WHERE d.status = 'acknowledged' AND NOT EXISTS (
    SELECT 1 FROM outbox.outbox_delivery_attempt_finishes f
    WHERE f.attempt_id = d.current_attempt_id AND f.outcome = 'acknowledged'))::bigint AS acks_without_finish,
  -- at_most_one_finish_per_start (the schema guarantees it; this proves it)
  (SELECT count(*) FROM (
    SELECT attempt_id FROM outbox.outbox_delivery_attempt_finishes GROUP BY 1 HAVING count(*) > 1) x)::bigint AS starts_finished_twice,
  -- every_start_finished
  (SELECT count(*) FROM outbox.outbox_delivery_attempt_starts s
    WHERE NOT EXISTS (SELECT 1 FROM outbox.outbox_delivery_attempt_finishes f WHERE f.attempt_id = s.attempt_id))::bigint AS unfinished_starts,
  -- published_at_exact (OB-PUB-1): set exactly when every mandatory delivery is acknowledged
  (SELECT count(*) FROM outbox.outbox_events e
    WHERE (e.published_at IS NOT NULL) <> NOT EXISTS (
      SELECT 1 FROM outbox.outbox_deliveries d
      WHERE d.event_id = e.event_id AND d.mandatory AND d.status <> 'acknowledged'))::bigint AS events_published_wrongly,
  -- ack_iff_one_acked_finish
  (SELECT count(*) FROM outbox.outbox_deliveries d
    WHERE (d.status = 'acknowledged') <> (
      SELECT count(*) = 1 FROM outbox.outbox_delivery_attempt_starts s
      JOIN outbox.outbox_delivery_attempt_finishes f USING (attempt_id)
      WHERE s.event_id = d.event_id AND s.destination = d.destination AND f.outcome = 'acknowledged'))::bigint AS deliveries_status_disagrees_with_finishes,
  -- every_event_published
  (SELECT count(*) FROM outbox.outbox_events WHERE published_at IS NULL)::bigint AS unpublished_events,
  -- no_quarantine
  (SELECT count(*) FROM outbox.outbox_quarantine)::bigint AS quarantine_records;
