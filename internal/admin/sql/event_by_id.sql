-- One event by its exact id (primary key).
SELECT {{event_columns}}
  FROM outbox.outbox_events e
 WHERE e.event_id = @event_id::uuid
