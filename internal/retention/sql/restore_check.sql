-- Restore drill: the restored rows hang together as the foreign keys the
-- replica-mode insert skipped would demand (each count must be zero).
SELECT
  (SELECT count(*) FROM outbox.outbox_events e WHERE NOT EXISTS (
     SELECT 1 FROM outbox.delivery_set_versions v
      WHERE (v.delivery_set_version, v.delivery_set_definition_schema_version,
             v.delivery_set_definition_digest_algorithm_version, v.delivery_set_definition_digest)
          = (e.delivery_set_version, e.delivery_set_definition_schema_version,
             e.delivery_set_definition_digest_algorithm_version, e.delivery_set_definition_digest))) AS events_without_definition,
  (SELECT count(*) FROM outbox.outbox_deliveries d WHERE NOT EXISTS (
     SELECT 1 FROM outbox.outbox_events e WHERE e.event_id = d.event_id)) AS deliveries_without_event,
  (SELECT count(*) FROM outbox.outbox_delivery_attempt_starts s WHERE NOT EXISTS (
     SELECT 1 FROM outbox.outbox_deliveries d WHERE (d.event_id, d.destination) = (s.event_id, s.destination))) AS starts_without_delivery,
  (SELECT count(*) FROM outbox.outbox_delivery_attempt_finishes f WHERE NOT EXISTS (
     SELECT 1 FROM outbox.outbox_delivery_attempt_starts s WHERE s.attempt_id = f.attempt_id)) AS finishes_without_start,
  (SELECT count(*) FROM outbox.delivery_set_members m WHERE NOT EXISTS (
     SELECT 1 FROM outbox.destination_bindings b WHERE b.destination = m.destination)) AS members_without_binding
