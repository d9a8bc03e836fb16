-- One event by its exact id (primary key).
-- $1 event id.
SELECT {{event_columns}}
  FROM outbox.outbox_events e
 WHERE e.event_id = $1::uuid
