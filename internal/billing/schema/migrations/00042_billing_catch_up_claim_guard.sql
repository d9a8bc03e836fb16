-- The catch-up claim row moves only as its writers move it (issue 37
-- review; 00024: "the claim row follows its fence"). Before this migration
-- oceanway_billing, which holds UPDATE on billing.settlement_catch_up_claims
-- (available_at, work_generation, attempt_number) for the worker's claim,
-- release and renewal and for the fence's follow trigger, could commit a
-- claim row no legitimate writer writes, and lose the Work: it is never
-- claimed or finished again (until the next reopen, or ever):
--   - available_at = 'infinity' for a fence that is not caught up: the row
--     leaves the partial index settlement_catch_up_claims_available, which
--     is all a claim reads;
--   - a finite available_at for a caught-up fence: the claim picks it up and
--     its attempt is refused (BC007.attempt-not-active), so the claim
--     statement fails on every try;
--   - a work_generation that is not the fence's active generation, or an
--     attempt_number that is not the generation's latest attempt (0 before
--     the first): the next claim's attempt is refused (BC007), on every try.
--
-- The legitimate writers (docs/billing-catch-up.md):
--   - billing.catch_up_claim_follow (00024), the fence's AFTER trigger: at
--     the fence's insert, the row (active generation, attempt 0,
--     '-infinity'); when the fence is caught up, available_at = 'infinity';
--     when the generation moves (the reopen, a transition's successor),
--     work_generation = the new active generation, attempt_number = 0,
--     available_at = '-infinity';
--   - the worker's claim (internal/work LeasedClaim over
--     catchup.claimableCatchUp): available_at = now + lease, attempt_number
--     + 1, and in the same statement the attempt of that number
--     (startCatchUpAttempts), only for rows before 'infinity';
--   - its release and renewal: available_at = now + a bounded delay, while
--     the attempt still owns the row.
-- So after every statement: available_at is 'infinity' exactly when the
-- fence is caught up, work_generation is the fence's active generation and
-- attempt_number is that generation's latest attempt number (0 if none).
-- The guard checks the moves that can break that, at the end of the
-- statement (an AFTER row trigger: the claim's attempt is inserted later in
-- the same statement than the claim row's update).
--
-- Cost: the trigger's WHEN lets a release or renewal of a claimable row
-- (only available_at moves, neither side 'infinity') through unchecked, with
-- no event queued. A claim (attempt_number moves) costs one primary-key
-- probe of settlement_catch_up_attempts per claimed row (an AFTER row
-- event, fired at the end of the claim statement); a park one primary-key
-- probe of settlement_catch_up_fences; a generation move (reopen,
-- successor) both. SECURITY INVOKER: every writer of the row reads the
-- fences and attempts (oceanway_billing holds SELECT on them).
--
-- Known, not refused here: a finite available_at far in the future keeps a
-- Work claimable only then; the claim's clock is the worker's (cfg.Now), so
-- the database cannot bound it against its own.
--
-- Custom SQLSTATE (new):
--   BC012 a catch-up claim row moved in a way no claim, release, renewal or
--         fence follow moves it (the Work would never be claimed again).

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION billing.catch_up_claim_guard() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  f_state      text;
  f_generation bigint;
  latest       bigint;
BEGIN
  IF NEW.available_at = 'infinity' OR OLD.available_at = 'infinity' OR NEW.work_generation <> OLD.work_generation THEN
    SELECT f.coordination_state, f.active_work_generation INTO f_state, f_generation
    FROM billing.settlement_catch_up_fences f WHERE f.settlement_dimension_id = NEW.settlement_dimension_id;
    IF /* guard BC012.park-not-caught-up */ NEW.available_at = 'infinity' AND f_state IS DISTINCT FROM 'caught_up' THEN
      RAISE EXCEPTION 'billing: catch-up claim % parked at infinity while its fence is % (the Work would never be claimed)',
        NEW.settlement_dimension_id, f_state USING ERRCODE = 'BC012';
    ELSIF /* guard BC012.unpark-caught-up */ NEW.available_at <> 'infinity' AND f_state = 'caught_up' THEN
      RAISE EXCEPTION 'billing: catch-up claim % made claimable at % while its fence is caught up (every claim of it would fail)',
        NEW.settlement_dimension_id, NEW.available_at USING ERRCODE = 'BC012';
    ELSIF /* guard BC012.generation-not-active */ NEW.work_generation IS DISTINCT FROM f_generation THEN
      RAISE EXCEPTION 'billing: catch-up claim % names generation %, its fence''s active generation is %',
        NEW.settlement_dimension_id, NEW.work_generation, f_generation USING ERRCODE = 'BC012';
    END IF;
  END IF;
  IF NEW.attempt_number <> OLD.attempt_number OR NEW.work_generation <> OLD.work_generation THEN
    SELECT a.attempt_number INTO latest FROM billing.settlement_catch_up_attempts a
    WHERE a.settlement_dimension_id = NEW.settlement_dimension_id AND a.work_generation = NEW.work_generation
    ORDER BY a.attempt_number DESC LIMIT 1;
    IF /* guard BC012.attempt-not-latest */ NEW.attempt_number <> COALESCE(latest, 0) THEN
      RAISE EXCEPTION 'billing: catch-up claim % at attempt % of generation %, whose latest attempt is % (the next claim''s attempt would be refused)',
        NEW.settlement_dimension_id, NEW.attempt_number, NEW.work_generation, COALESCE(latest, 0) USING ERRCODE = 'BC012';
    END IF;
  END IF;
  RETURN NULL;
END
$fn$;
CREATE TRIGGER settlement_catch_up_claims_guard AFTER UPDATE ON billing.settlement_catch_up_claims
  FOR EACH ROW WHEN (NEW.available_at = 'infinity' OR OLD.available_at = 'infinity'
    OR NEW.work_generation <> OLD.work_generation OR NEW.attempt_number <> OLD.attempt_number)
  EXECUTE FUNCTION billing.catch_up_claim_guard();

REVOKE ALL ON FUNCTION billing.catch_up_claim_guard() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION billing.catch_up_claim_guard() TO oceanway_billing;
-- +goose StatementEnd
