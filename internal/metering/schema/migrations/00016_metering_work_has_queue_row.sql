-- A Work commits with its queue row (issue 37 review; 00003: the queue row
-- is "inserted with the Work, deleted with its finish"). Before this
-- migration oceanway_metering, which holds INSERT on metering.input_works
-- for the input processor, could commit a Work with no
-- metering.pending_works row: nothing claims a Work that is not queued
-- (ME009 refuses any attempt of it) and nothing finishes it, so the Work
-- was lost, never claimed and never finished. 00015 (ME012) closed the
-- other way (its queue row deleted without a finish).
--
-- The input processor inserts the Work and then its queue row in the same
-- transaction (metering.insertWork: work_insert.sql, then work_enqueue.sql,
-- which copies the Work's lane_kind). Both lanes, eligibility and provider
-- cost, keep their Works in metering.input_works and queue them in
-- metering.pending_works, so one rule covers both. The check is a deferred
-- constraint trigger (the queue row follows the Work in the transaction):
-- at COMMIT a new Work must have
--   - a queue row, of its own lane (a queue row of the other lane is
--     claimed only by the other lane's workers, which never finish it), or
--   - a finish (a Work finished in the transaction that created it: its
--     attempt required its queue row, ME009, which left with the finish,
--     ME012), or
--   - an attempt: ME009.attempt-not-queued owns that case (an attempt of a
--     Work that is not queued is refused at COMMIT), so this guard leaves it
--     to that clause rather than answer first with another code.
-- A replayed insert (ON CONFLICT DO NOTHING) inserts no row and fires
-- nothing. SECURITY INVOKER: every role that inserts a Work reads the
-- queue, finishes and attempts (oceanway_metering holds SELECT on them).
-- The legitimate path costs one primary-key probe of
-- metering.pending_works per new Work at COMMIT (the finish and attempt
-- probes run only when there is no queue row).
--
-- Custom SQLSTATE (new):
--   ME013 at COMMIT a metering.input_works row with no queue row of its lane
--         and no finish (the Work would never be claimed or finished).

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION metering.work_committed_with_queue_row() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  queued_lane text;
BEGIN
  SELECT q.lane_kind INTO queued_lane FROM metering.pending_works q WHERE q.work_ref = NEW.work_ref;
  IF /* guard ME013.work-not-queued */ NOT FOUND
     AND NOT EXISTS (SELECT 1 FROM metering.work_finishes f WHERE f.work_ref = NEW.work_ref)
     AND NOT EXISTS (SELECT 1 FROM metering.work_attempts a WHERE a.work_ref = NEW.work_ref) THEN
    RAISE EXCEPTION 'metering: work % committed without its queue row or a finish (it would never be claimed or finished)', NEW.work_ref
      USING ERRCODE = 'ME013';
  ELSIF /* guard ME013.queue-lane-mismatch */ queued_lane <> NEW.lane_kind THEN
    RAISE EXCEPTION 'metering: work % of lane % queued in lane % (no worker of its lane would claim it)', NEW.work_ref, NEW.lane_kind, queued_lane
      USING ERRCODE = 'ME013';
  END IF;
  RETURN NULL;
END
$fn$;
CREATE CONSTRAINT TRIGGER input_works_committed_with_queue_row
  AFTER INSERT ON metering.input_works DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION metering.work_committed_with_queue_row();

REVOKE ALL ON FUNCTION metering.work_committed_with_queue_row() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION metering.work_committed_with_queue_row() TO oceanway_metering;
-- +goose StatementEnd

