-- What `oceanway retention plan` reports (RET-1): every event created before
-- the cutoff, by class, and what the closed ones would take with them. Only
-- a closed event may ever leave the hot tables: published, every delivery
-- acknowledged (mandatory or not), no quarantine row, no legacy adoption
-- record. The first matching class wins, in this order.
WITH cutoff AS (
  SELECT now() - make_interval(secs => @older_than_seconds::double precision) AS at
), old AS (
  SELECT e.event_id,
         CASE
           WHEN e.published_at IS NULL THEN 'unpublished'
           WHEN EXISTS (SELECT 1 FROM outbox.outbox_quarantine q WHERE q.event_id = e.event_id) THEN 'quarantined'
           WHEN EXISTS (SELECT 1 FROM outbox.outbox_deliveries d
                         WHERE d.event_id = e.event_id AND d.status <> 'acknowledged') THEN 'open_delivery'
           WHEN EXISTS (SELECT 1 FROM outbox.legacy_adoptions a WHERE a.event_id = e.event_id) THEN 'legacy_adoption_record'
           ELSE 'closed'
         END AS class
    FROM outbox.outbox_events e, cutoff
   WHERE e.created_at < cutoff.at
)
SELECT (SELECT at FROM cutoff) AS cutoff,
       coalesce((SELECT jsonb_object_agg(class, n) FROM (SELECT class, count(*) AS n FROM old GROUP BY class) c), '{}'::jsonb) AS classes,
       (SELECT count(*) FROM old WHERE class = 'closed') AS events,
       (SELECT count(*) FROM outbox.outbox_deliveries d JOIN old USING (event_id) WHERE old.class = 'closed') AS deliveries,
       (SELECT count(*) FROM outbox.outbox_delivery_attempt_starts s JOIN old USING (event_id) WHERE old.class = 'closed') AS attempt_starts,
       (SELECT count(*) FROM outbox.outbox_delivery_attempt_finishes f
          JOIN outbox.outbox_delivery_attempt_starts s USING (attempt_id)
          JOIN old ON old.event_id = s.event_id WHERE old.class = 'closed') AS attempt_finishes
