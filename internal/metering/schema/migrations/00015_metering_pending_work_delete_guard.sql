-- A queue row leaves only with its finish (issue 37 review; 00003: the
-- queue row is "inserted with the Work, deleted with its finish"). Before
-- this migration oceanway_metering, which holds DELETE on
-- metering.pending_works for the worker's dequeue, could commit a DELETE of
-- the queue row of a claimed, unfinished Work: nothing claims a Work that
-- is not queued (ME009 refuses its next attempt) and nothing finishes it,
-- so the Work was lost without a finish. 00013 refuses TRUNCATE of the
-- queue for the same reason (ME001); a row DELETE is refused here.
--
-- The worker writes the Work's finish and then deletes its queue row in the
-- same transaction (metering.finishTx: finish_insert.sql, then
-- work_dequeue.sql), so a BEFORE DELETE row trigger sees the finish: the
-- check is immediate, not deferred. It is one primary-key probe of
-- metering.work_finishes (work_ref: a Work is one generation of one lane,
-- its finish is unique) per deleted row.
--
-- Custom SQLSTATE (new):
--   ME012 a metering.pending_works row deleted while its Work has no finish.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION metering.pending_work_deleted_with_finish() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF /* guard ME012.pending-delete-unfinished */ NOT EXISTS (SELECT 1 FROM metering.work_finishes f WHERE f.work_ref = OLD.work_ref) THEN
    RAISE EXCEPTION 'metering: queue row of work % deleted without its finish (the Work would never be claimed or finished)', OLD.work_ref
      USING ERRCODE = 'ME012';
  END IF;
  RETURN OLD;
END
$fn$;
CREATE TRIGGER pending_works_deleted_with_finish BEFORE DELETE ON metering.pending_works
  FOR EACH ROW EXECUTE FUNCTION metering.pending_work_deleted_with_finish();

REVOKE ALL ON FUNCTION metering.pending_work_deleted_with_finish() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION metering.pending_work_deleted_with_finish() TO oceanway_metering;
-- +goose StatementEnd
