-- Events that carry an exact id: as their aggregate (indexed by
-- outbox_events_aggregate) or in a payload field (runId and
-- billingReservationId have expression indexes, migration 00006; the field
-- is spelled out per branch so the planner can use them). $4 still bounds
-- the result and the statement timeout bounds the work.
-- $1 id, $2 aggregate type, $3 payload field, $4 limit (the caller asks for
-- one more row than it shows to detect truncation).
WITH hits AS (
  (SELECT a.event_id FROM outbox.outbox_events a
    WHERE a.aggregate_type = $2 AND a.aggregate_id = $1
    LIMIT $4)
  UNION
  (SELECT p.event_id FROM outbox.outbox_events p
    WHERE ($3::text = 'runId' AND p.event_payload ->> 'runId' = $1)
       OR ($3::text = 'billingReservationId' AND p.event_payload ->> 'billingReservationId' = $1)
    LIMIT $4)
)
SELECT {{event_columns}}
  FROM outbox.outbox_events e
  JOIN hits h ON h.event_id = e.event_id
 ORDER BY e.created_at, e.aggregate_revision, e.event_id
 LIMIT $4
