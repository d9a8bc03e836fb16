-- Events that carry an exact id: as their aggregate (indexed by
-- outbox_events_aggregate) or in a payload field. There is no expression
-- index on the payload field, so that branch scans outbox.outbox_events; it
-- stops as soon as it has $4 rows and the statement timeout bounds it.
-- $1 id, $2 aggregate type, $3 payload field, $4 limit (the caller asks for
-- one more row than it shows to detect truncation).
WITH hits AS (
  (SELECT a.event_id FROM outbox.outbox_events a
    WHERE a.aggregate_type = $2 AND a.aggregate_id = $1
    LIMIT $4)
  UNION
  (SELECT p.event_id FROM outbox.outbox_events p
    WHERE p.event_payload ->> $3::text = $1
    LIMIT $4)
)
SELECT {{event_columns}}
  FROM outbox.outbox_events e
  JOIN hits h ON h.event_id = e.event_id
 ORDER BY e.created_at, e.aggregate_revision, e.event_id
 LIMIT $4
