-- One archive segment: every listed event with its deliveries, attempt
-- starts and attempt finishes, each row as to_jsonb of the table row (every
-- column, by name; the derived event_payload is left out: it is the
-- envelope's payload). The caller runs it with TimeZone UTC, so timestamps
-- render the same everywhere, and canonicalizes the text with RFC 8785. The
-- restore drill runs the same statement on the scratch database and must
-- get the same bytes.
SELECT jsonb_build_object(
  'kind', 'oceanway.outbox-archive-segment@1',
  'events', coalesce(jsonb_agg(jsonb_build_object(
    'event', to_jsonb(e) - 'event_payload',
    'deliveries', (SELECT coalesce(jsonb_agg(to_jsonb(d) ORDER BY d.destination), '[]'::jsonb)
                     FROM outbox.outbox_deliveries d WHERE d.event_id = e.event_id),
    'attemptStarts', (SELECT coalesce(jsonb_agg(to_jsonb(s) ORDER BY s.destination, s.started_at, s.attempt_id), '[]'::jsonb)
                        FROM outbox.outbox_delivery_attempt_starts s WHERE s.event_id = e.event_id),
    -- a finish is read by its primary key from its start (a join let the
    -- planner hash the whole finish table once per event)
    'attemptFinishes', (SELECT coalesce(jsonb_agg(x.finish ORDER BY x.attempt_id), '[]'::jsonb)
                          FROM (SELECT s.attempt_id,
                                       (SELECT to_jsonb(f) FROM outbox.outbox_delivery_attempt_finishes f
                                         WHERE f.attempt_id = s.attempt_id) AS finish
                                  FROM outbox.outbox_delivery_attempt_starts s
                                 WHERE s.event_id = e.event_id) x
                         WHERE x.finish IS NOT NULL)
  ) ORDER BY e.event_id), '[]'::jsonb))::text AS segment
  FROM outbox.outbox_events e
 WHERE e.event_id = ANY (@event_ids::uuid[])
