-- Restore drill: one archived segment into the scratch database (triggers
-- off: session_replication_role = replica), every column from the archived
-- row; event_payload is the envelope's payload, as at append.
WITH doc AS (SELECT @segment::jsonb AS j), ev AS (
  SELECT x FROM doc, jsonb_array_elements(doc.j->'events') x
), e AS (
  INSERT INTO outbox.outbox_events
  SELECT r.* FROM ev, jsonb_populate_record(NULL::outbox.outbox_events,
                        (ev.x->'event') || jsonb_build_object('event_payload', ((ev.x->'event'->>'event_envelope')::jsonb)->'payload')) r
), d AS (
  INSERT INTO outbox.outbox_deliveries
  SELECT r.* FROM ev, jsonb_populate_recordset(NULL::outbox.outbox_deliveries, ev.x->'deliveries') r
), s AS (
  INSERT INTO outbox.outbox_delivery_attempt_starts
  SELECT r.* FROM ev, jsonb_populate_recordset(NULL::outbox.outbox_delivery_attempt_starts, ev.x->'attemptStarts') r
)
INSERT INTO outbox.outbox_delivery_attempt_finishes
SELECT r.* FROM ev, jsonb_populate_recordset(NULL::outbox.outbox_delivery_attempt_finishes, ev.x->'attemptFinishes') r
