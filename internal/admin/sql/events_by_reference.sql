-- Events that carry an exact id: as their aggregate (indexed by
-- outbox_events_aggregate) or in a payload field (runId and
-- billingReservationId have expression indexes, admin migration line
-- 00001_admin_lookup_indexes.sql; the field is spelled out per branch so
-- the planner can use them). @row_limit still bounds the result and the
-- statement timeout bounds the work. The caller asks for one more row than
-- it shows to detect truncation.
WITH hits AS (
  (SELECT a.event_id FROM outbox.outbox_events a
    WHERE a.aggregate_type = @aggregate_type AND a.aggregate_id = @id
    LIMIT @row_limit)
  UNION
  (SELECT p.event_id FROM outbox.outbox_events p
    WHERE (@payload_field::text = 'runId' AND p.event_payload ->> 'runId' = @id)
       OR (@payload_field::text = 'billingReservationId' AND p.event_payload ->> 'billingReservationId' = @id)
    LIMIT @row_limit)
)
SELECT {{event_columns}}
  FROM outbox.outbox_events e
  JOIN hits h ON h.event_id = e.event_id
 ORDER BY e.created_at, e.aggregate_revision, e.event_id
 LIMIT @row_limit
