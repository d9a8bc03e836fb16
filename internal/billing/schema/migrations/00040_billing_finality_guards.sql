-- Finality safety (issue 30; ADR-031: one success per fence, absorbing
-- terminal states, ledger groups tied to the fact that justifies them, one
-- event per fact). PostgreSQL refuses a forged Billing write even from the
-- project's own roles; docs/billing.md lists every guard.
--
--   1. The ledger is written only through three controlled functions, one
--      per justifying fact: billing.post_reservation_hold (the reservation;
--      the only one oceanway_admission may call), billing.post_finalization
--      (the committed finalization) and billing.post_settlement_transition
--      (a refund transition). The lines are derived from the fact, never
--      passed in. Neither role may INSERT into the ledger tables.
--   2. At commit every posting group proves its justifying fact and that its
--      lines are exactly that fact's amounts (BL006), and no balance of its
--      reservation is negative (BL010). The check runs for the group and for
--      every line, so a line added to an old group is refused too.
--   3. Balances are derived from the postings (a view): no stand-alone row
--      exists to be edited.
--   4. A committed finalization fact proves at commit that its fence is
--      committed with it at its revision, its Work committed, its
--      reservation terminal with its amounts, its group a finalization group,
--      its success decision stored for the fence with the same amounts, and
--      its event appended (BL007). The fence's committed_ref must name a
--      committed fact (deferred foreign key, 23503).
--   5. No decision for a committed fence; one success decision per fence
--      (BL008; a second different success is 23505).
--   6. billing.finalization.committed@1 and
--      billing.settlement-transition.committed@1 are appended only with the
--      one fact that names them, or adopted from a legacy outbox in the same
--      transaction (OB-BOOT-1) (BL009).
--   7. The catch-up: a finished attempt's token writes nothing (BC008); a
--      fence's settled amount and state revision move only with the
--      transition that moves them, amounts equal (BC009); a transition
--      starts from its fence's settled state and active Work (BC010) and
--      commits with its fence move and its event (BC011).
--   8. Every billing table refuses TRUNCATE (BL001/BC001), for every role.
--
-- Custom SQLSTATEs added here (internal/billing/errors.go,
-- internal/billing/catchup/fence.go name them):
--   BL006 a posting group without its justifying fact, or lines that are not
--         exactly that fact's amounts
--   BL007 a committed finalization fact whose fence, Work, reservation,
--         group, decision or event does not commit with it
--   BL008 a finalization decision for a committed fence
--   BL009 a billing fact event without the one fact that names it
--   BL010 a negative ledger balance
--   BC008 a catch-up write with the token of a finished attempt
--   BC009 a catch-up fence's settled amount or state revision moved without
--         the transition that moves it
--   BC010 a transition that does not start from its fence's settled state
--         and active Work
--   BC011 a transition that does not commit with its fence move (to its
--         revision and settled amount, naming its event) and its event

-- +goose Up
-- +goose StatementBegin

-- 3. Balances derived from postings. Credit-normal accounts (hold,
-- revenue) add credits, the debit-normal wallet adds debits.
DROP TRIGGER ledger_postings_balance ON billing.ledger_postings;
DROP FUNCTION billing.post_balance();
DROP TABLE billing.ledger_balances;
CREATE VIEW billing.ledger_balances AS
SELECT billing_reservation_id, account_kind,
       sum(CASE WHEN (account_kind = 'customer_wallet') = (direction = 'debit') THEN amount ELSE -amount END) AS balance
  FROM billing.ledger_postings
 GROUP BY billing_reservation_id, account_kind;
REVOKE ALL ON billing.ledger_balances FROM PUBLIC;
GRANT SELECT ON billing.ledger_balances TO oceanway_billing;

-- A settlement_transition group names its transition (one group per
-- transition). Groups written before this line get theirs from the one
-- refund transition of the same reservation, time and amount.
ALTER TABLE billing.ledger_posting_groups
  ADD COLUMN settlement_transition_ref text UNIQUE REFERENCES billing.settlement_transitions (transition_ref);
ALTER TABLE billing.ledger_posting_groups DISABLE TRIGGER ledger_posting_groups_immutable;
UPDATE billing.ledger_posting_groups g
   SET settlement_transition_ref = t.transition_ref
  FROM billing.settlement_transitions t
 WHERE g.group_kind = 'settlement_transition' AND t.transition_kind = 'refund'
   AND t.billing_reservation_id = g.billing_reservation_id AND t.committed_at = g.created_at
   AND t.transition_amount = (SELECT sum(p.amount) FROM billing.ledger_postings p
                               WHERE p.posting_group_id = g.posting_group_id AND p.direction = 'debit');
ALTER TABLE billing.ledger_posting_groups ENABLE TRIGGER ledger_posting_groups_immutable;
ALTER TABLE billing.ledger_posting_groups
  ADD CONSTRAINT ledger_group_transition CHECK ((group_kind = 'settlement_transition') = (settlement_transition_ref IS NOT NULL));

-- 2. The proof of a posting group, at commit.
DROP TRIGGER ledger_postings_balanced ON billing.ledger_postings;
DROP FUNCTION billing.check_posting_group();

CREATE FUNCTION billing.prove_posting_group(p_group uuid) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  g billing.ledger_posting_groups;
  r billing.reservation_states;
  c billing.finalization_committed;
  t billing.settlement_transitions;
  lines bigint;
  debits numeric;
  credits numeric;
  off_identity bigint;
  hold_cr numeric;
  hold_dr numeric;
  wallet_cr numeric;
  wallet_dr numeric;
  revenue_cr numeric;
  revenue_dr numeric;
  want boolean;
  negative text;
BEGIN
  SELECT * INTO g FROM billing.ledger_posting_groups WHERE posting_group_id = p_group;
  SELECT * INTO r FROM billing.reservation_states WHERE billing_reservation_id = g.billing_reservation_id;
  SELECT count(*),
         COALESCE(sum(amount) FILTER (WHERE direction = 'debit'), 0), COALESCE(sum(amount) FILTER (WHERE direction = 'credit'), 0),
         count(*) FILTER (WHERE billing_reservation_id <> g.billing_reservation_id OR economic_identity <> g.economic_identity
                            OR billing_account_id <> r.billing_account_id),
         COALESCE(sum(amount) FILTER (WHERE account_kind = 'reservation_hold' AND direction = 'credit'), 0),
         COALESCE(sum(amount) FILTER (WHERE account_kind = 'reservation_hold' AND direction = 'debit'), 0),
         COALESCE(sum(amount) FILTER (WHERE account_kind = 'customer_wallet' AND direction = 'credit'), 0),
         COALESCE(sum(amount) FILTER (WHERE account_kind = 'customer_wallet' AND direction = 'debit'), 0),
         COALESCE(sum(amount) FILTER (WHERE account_kind = 'settled_revenue' AND direction = 'credit'), 0),
         COALESCE(sum(amount) FILTER (WHERE account_kind = 'settled_revenue' AND direction = 'debit'), 0)
    INTO lines, debits, credits, off_identity, hold_cr, hold_dr, wallet_cr, wallet_dr, revenue_cr, revenue_dr
    FROM billing.ledger_postings WHERE posting_group_id = g.posting_group_id;
  IF debits <> credits OR lines < 2 THEN
    RAISE EXCEPTION 'billing: posting group % is not balanced (debits %, credits %, % lines)', g.posting_group_id, debits, credits, lines
      USING ERRCODE = 'BL004';
  END IF;
  IF off_identity > 0 OR g.economic_identity <> r.economic_identity THEN
    RAISE EXCEPTION 'billing: posting group % has lines off its reservation''s account or economic identity', g.posting_group_id
      USING ERRCODE = 'BL004';
  END IF;
  CASE g.group_kind
  WHEN 'reservation_hold' THEN
    -- The hold moves exactly the reserved amount from the wallet.
    want := lines = 2 AND hold_cr = r.reserved_amount AND wallet_dr = r.reserved_amount;
  WHEN 'finalization' THEN
    -- billingc.FinalizationPostings of the committed fact that names it.
    SELECT * INTO c FROM billing.finalization_committed WHERE posting_group_id = g.posting_group_id;
    want := FOUND AND c.billing_reservation_id = g.billing_reservation_id
      AND lines = 1 + (c.settled_amount > 0)::int + (c.released_amount > 0)::int
      AND hold_dr = c.reserved_amount AND revenue_cr = c.settled_amount AND wallet_cr = c.released_amount;
  WHEN 'settlement_transition' THEN
    -- A refund: settled revenue back to the wallet, the transition's amount.
    SELECT * INTO t FROM billing.settlement_transitions WHERE transition_ref = g.settlement_transition_ref;
    want := FOUND AND t.transition_kind = 'refund' AND t.billing_reservation_id = g.billing_reservation_id
      AND lines = 2 AND revenue_dr = t.transition_amount AND wallet_cr = t.transition_amount;
  ELSE
    want := false;
  END CASE;
  IF NOT want THEN
    RAISE EXCEPTION 'billing: % posting group % is not exactly the amounts of the fact that justifies it', g.group_kind, g.posting_group_id
      USING ERRCODE = 'BL006';
  END IF;
  SELECT string_agg(format('%s %s', account_kind, balance), ', ') INTO negative
    FROM (SELECT account_kind,
                 sum(CASE WHEN (account_kind = 'customer_wallet') = (direction = 'debit') THEN amount ELSE -amount END) AS balance
            FROM billing.ledger_postings WHERE billing_reservation_id = g.billing_reservation_id
           GROUP BY account_kind) b
   WHERE balance < 0;
  IF negative IS NOT NULL THEN
    RAISE EXCEPTION 'billing: reservation % would have a negative balance (%)', g.billing_reservation_id, negative
      USING ERRCODE = 'BL010';
  END IF;
END
$fn$;

-- The proof runs once per group: from its highest line (a line appended
-- to an old group is the highest, so the whole group is proven again);
-- a group with no line at all is refused from the group's own trigger.
CREATE FUNCTION billing.prove_posting_line() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF NEW.line_no = (SELECT max(line_no) FROM billing.ledger_postings WHERE posting_group_id = NEW.posting_group_id) THEN
    PERFORM billing.prove_posting_group(NEW.posting_group_id);
  END IF;
  RETURN NULL;
END
$fn$;
CREATE FUNCTION billing.prove_posting_group_has_lines() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF /* guard BL004.group-no-line */ NOT EXISTS (SELECT 1 FROM billing.ledger_postings WHERE posting_group_id = NEW.posting_group_id) THEN
    RAISE EXCEPTION 'billing: posting group % has no line', NEW.posting_group_id USING ERRCODE = 'BL004';
  END IF;
  RETURN NULL;
END
$fn$;
CREATE CONSTRAINT TRIGGER ledger_posting_groups_proven AFTER INSERT ON billing.ledger_posting_groups
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION billing.prove_posting_group_has_lines();
CREATE CONSTRAINT TRIGGER ledger_postings_proven AFTER INSERT ON billing.ledger_postings
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION billing.prove_posting_line();

-- 1. The controlled writers. Each derives the lines from its fact; the
-- proof above checks them again at commit.
CREATE FUNCTION billing.post_lines(p_group uuid, r billing.reservation_states, p_kind text, p_transition_ref text,
    p_at timestamptz, p_lines text[][])
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  i int;
BEGIN
  INSERT INTO billing.ledger_posting_groups (posting_group_id, billing_reservation_id, group_kind, economic_identity, created_at,
      settlement_transition_ref)
  VALUES (p_group, r.billing_reservation_id, p_kind, r.economic_identity, p_at, p_transition_ref);
  FOR i IN 1 .. array_length(p_lines, 1) LOOP
    INSERT INTO billing.ledger_postings (posting_group_id, line_no, billing_reservation_id, billing_account_id, economic_identity,
        account_kind, direction, amount, posted_at)
    VALUES (p_group, i, r.billing_reservation_id, r.billing_account_id, r.economic_identity,
        p_lines[i][1], p_lines[i][2], p_lines[i][3]::numeric, p_at);
  END LOOP;
END
$fn$;

CREATE FUNCTION billing.post_reservation_hold(p_reservation uuid, p_group uuid, p_at timestamptz)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  r billing.reservation_states;
BEGIN
  SELECT * INTO r FROM billing.reservation_states WHERE billing_reservation_id = p_reservation;
  IF /* guard BL006.hold-not-reserved */ NOT FOUND OR r.state <> 'reserved' THEN
    RAISE EXCEPTION 'billing: a hold needs a reserved reservation (% is %)', p_reservation, COALESCE(r.state, 'absent')
      USING ERRCODE = 'BL006';
  END IF;
  PERFORM billing.post_lines(p_group, r, 'reservation_hold', NULL, p_at, ARRAY[
    ARRAY['reservation_hold', 'credit', r.reserved_amount::text],
    ARRAY['customer_wallet', 'debit', r.reserved_amount::text]]);
END
$fn$;

CREATE FUNCTION billing.post_finalization(p_reservation uuid, p_group uuid, p_settled numeric, p_released numeric, p_at timestamptz)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  r billing.reservation_states;
  lines text[][] := ARRAY[]::text[];
BEGIN
  SELECT * INTO r FROM billing.reservation_states WHERE billing_reservation_id = p_reservation;
  IF /* guard BL006.finalization-off-reservation */ NOT FOUND OR r.state <> 'reserved' OR p_settled < 0 OR p_released < 0 OR p_settled + p_released <> r.reserved_amount THEN
    RAISE EXCEPTION 'billing: a finalization of reservation % (%) settles + releases its reserved amount, not % + %',
      p_reservation, COALESCE(r.state, 'absent'), p_settled, p_released USING ERRCODE = 'BL006';
  END IF;
  lines := ARRAY[ARRAY['reservation_hold', 'debit', r.reserved_amount::text]];
  IF p_settled > 0 THEN
    lines := lines || ARRAY[ARRAY['settled_revenue', 'credit', p_settled::text]];
  END IF;
  IF p_released > 0 THEN
    lines := lines || ARRAY[ARRAY['customer_wallet', 'credit', p_released::text]];
  END IF;
  PERFORM billing.post_lines(p_group, r, 'finalization', NULL, p_at, lines);
END
$fn$;

CREATE FUNCTION billing.post_settlement_transition(p_transition_ref text, p_group uuid)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  t billing.settlement_transitions;
  r billing.reservation_states;
BEGIN
  SELECT * INTO t FROM billing.settlement_transitions WHERE transition_ref = p_transition_ref;
  -- Refunds of one reservation serialise here, so the balance proof at
  -- commit (BL010) sees every earlier refund of the reservation.
  SELECT * INTO r FROM billing.reservation_states WHERE billing_reservation_id = t.billing_reservation_id FOR NO KEY UPDATE;
  IF /* guard BL006.transition-not-refund */ t.transition_kind IS DISTINCT FROM 'refund' OR r.state IS DISTINCT FROM 'settled' THEN
    RAISE EXCEPTION 'billing: only a refund transition of a settled reservation posts automatically (% is %)',
      p_transition_ref, COALESCE(t.transition_kind, 'absent') USING ERRCODE = 'BL006';
  END IF;
  PERFORM billing.post_lines(p_group, r, 'settlement_transition', t.transition_ref, t.committed_at, ARRAY[
    ARRAY['settled_revenue', 'debit', t.transition_amount::text],
    ARRAY['customer_wallet', 'credit', t.transition_amount::text]]);
END
$fn$;

REVOKE INSERT ON billing.ledger_posting_groups, billing.ledger_postings FROM oceanway_billing, oceanway_admission;
REVOKE ALL ON FUNCTION billing.prove_posting_group(uuid), billing.prove_posting_line(), billing.prove_posting_group_has_lines(),
  billing.post_lines(uuid, billing.reservation_states, text, text, timestamptz, text[]),
  billing.post_reservation_hold(uuid, uuid, timestamptz), billing.post_finalization(uuid, uuid, numeric, numeric, timestamptz),
  billing.post_settlement_transition(text, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION billing.post_reservation_hold(uuid, uuid, timestamptz) TO oceanway_admission;
GRANT EXECUTE ON FUNCTION billing.post_finalization(uuid, uuid, numeric, numeric, timestamptz),
  billing.post_settlement_transition(text, uuid) TO oceanway_billing;

-- 4. The committed finalization fact commits with everything it states.
CREATE FUNCTION billing.prove_finalization_committed() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  f billing.billing_finalization_fences;
  r billing.reservation_states;
  d billing.finalization_decisions;
  missing text;
BEGIN
  SELECT * INTO f FROM billing.billing_finalization_fences WHERE billing_finalization_fence_id = NEW.billing_finalization_fence_id;
  SELECT * INTO r FROM billing.reservation_states WHERE billing_reservation_id = NEW.billing_reservation_id;
  SELECT * INTO d FROM billing.finalization_decisions
   WHERE decision_ref = (NEW.committed_body::jsonb ->> 'billingFinalizationDecisionRef');
  missing := CASE
    WHEN /* guard BL007.fence-not-committed */ f.coordination_state IS DISTINCT FROM 'committed' OR f.committed_ref IS DISTINCT FROM NEW.committed_ref
      OR f.billing_reservation_id <> NEW.billing_reservation_id OR f.finalization_fence_revision <> NEW.finalization_fence_revision
      THEN 'its fence committed with it at its revision'
    WHEN /* guard BL007.work-not-committed */ NOT EXISTS (SELECT 1 FROM billing.billing_finalization_works
                      WHERE billing_finalization_fence_id = NEW.billing_finalization_fence_id AND work_generation = NEW.work_generation
                        AND billing_finalization_operation_id = NEW.billing_finalization_operation_id AND work_state = 'committed')
      THEN 'its Work committed'
    WHEN /* guard BL007.reservation-not-terminal */ r.committed_ref IS DISTINCT FROM NEW.committed_ref
      OR r.state <> CASE NEW.decision WHEN 'release_all' THEN 'released' ELSE 'settled' END
      OR r.settled_amount <> NEW.settled_amount OR r.released_amount <> NEW.released_amount OR r.reserved_amount <> NEW.reserved_amount
      THEN 'its reservation terminal with its amounts'
    WHEN /* guard BL007.no-finalization-group */ NOT EXISTS (SELECT 1 FROM billing.ledger_posting_groups
                      WHERE posting_group_id = NEW.posting_group_id AND group_kind = 'finalization'
                        AND billing_reservation_id = NEW.billing_reservation_id)
      THEN 'its finalization posting group'
    WHEN /* guard BL007.no-success-decision */ d.decision_ref IS NULL OR d.billing_finalization_fence_id <> NEW.billing_finalization_fence_id
      OR d.decision <> NEW.decision OR d.bundle_ref IS NULL
      OR d.settled_amount <> NEW.settled_amount OR d.released_amount <> NEW.released_amount
      THEN 'its success decision for the fence with the same amounts'
    WHEN /* guard BL007.no-event */ NOT EXISTS (SELECT 1 FROM outbox.outbox_events
                      WHERE event_id = NEW.event_id AND event_type = 'billing.finalization.committed@1'
                        AND event_envelope_sha256 = NEW.event_envelope_sha256)
      THEN 'its billing.finalization.committed@1 event'
    END;
  IF /* guard BL007.committed-unproven */ missing IS NOT NULL THEN
    RAISE EXCEPTION 'billing: committed finalization % does not commit with %', NEW.committed_ref, missing USING ERRCODE = 'BL007';
  END IF;
  RETURN NULL;
END
$fn$;
CREATE CONSTRAINT TRIGGER finalization_committed_proven AFTER INSERT ON billing.finalization_committed
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION billing.prove_finalization_committed();

ALTER TABLE billing.billing_finalization_fences
  ADD CONSTRAINT fence_committed_fact FOREIGN KEY (committed_ref) REFERENCES billing.finalization_committed (committed_ref)
  DEFERRABLE INITIALLY DEFERRED;

-- 5. Decisions: none after the success; one success per fence.
CREATE FUNCTION billing.guard_decision() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  -- FOR SHARE: a decision waits for a concurrent commit of its fence (the
  -- worker holds the fence FOR UPDATE from claim to commit) and sees it.
  IF /* guard BL008.decision-after-success */ (SELECT coordination_state FROM billing.billing_finalization_fences
       WHERE billing_finalization_fence_id = NEW.billing_finalization_fence_id FOR SHARE) = 'committed' THEN
    RAISE EXCEPTION 'billing: fence % is committed; no decision follows its success', NEW.billing_finalization_fence_id
      USING ERRCODE = 'BL008';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER finalization_decisions_guard BEFORE INSERT ON billing.finalization_decisions
  FOR EACH ROW EXECUTE FUNCTION billing.guard_decision();
CREATE UNIQUE INDEX finalization_decisions_one_success ON billing.finalization_decisions (billing_finalization_fence_id)
  WHERE decision IN ('settle_and_release_remainder', 'release_all');

-- 6. A billing fact event is appended only with the one fact naming it.
CREATE FUNCTION billing.prove_fact_event() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF /* guard BL009.fact-event-unbacked */ NOT (CASE NEW.event_type
            WHEN 'billing.finalization.committed@1' THEN
              EXISTS (SELECT 1 FROM billing.finalization_committed
                       WHERE event_id = NEW.event_id AND event_envelope_sha256 = NEW.event_envelope_sha256
                         AND billing_reservation_id::text = NEW.aggregate_id)
            ELSE
              EXISTS (SELECT 1 FROM billing.settlement_transitions
                       WHERE event_id = NEW.event_id AND event_envelope_sha256 = NEW.event_envelope_sha256
                         AND settlement_dimension_id::text = NEW.aggregate_id
                         AND from_settlement_state_revision = NEW.aggregate_revision)
          END)
     -- an event adopted from a legacy outbox (OB-BOOT-1) predates our facts
     AND NOT EXISTS (SELECT 1 FROM outbox.legacy_adoptions WHERE event_id = NEW.event_id) THEN
    RAISE EXCEPTION 'billing: event % (%) has no billing fact naming it', NEW.event_id, NEW.event_type USING ERRCODE = 'BL009';
  END IF;
  RETURN NULL;
END
$fn$;
CREATE CONSTRAINT TRIGGER billing_fact_events_proven AFTER INSERT ON outbox.outbox_events
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (NEW.event_type IN ('billing.finalization.committed@1', 'billing.settlement-transition.committed@1'))
  EXECUTE FUNCTION billing.prove_fact_event();

-- 7. The catch-up: a finished attempt's token is spent; a settled amount
-- moves only with its transition.
CREATE OR REPLACE FUNCTION billing.catch_up_require_latest_token(dim uuid, generation bigint, token uuid) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  latest uuid;
BEGIN
  SELECT fencing_token INTO latest FROM billing.settlement_catch_up_attempts
  WHERE settlement_dimension_id = dim AND work_generation = generation
  ORDER BY attempt_number DESC LIMIT 1;
  IF /* guard BC006.token-not-latest */ token IS NULL OR latest IS DISTINCT FROM token THEN
    RAISE EXCEPTION 'billing: fencing token % is not the latest attempt of catch-up work %/%', token, dim, generation
      USING ERRCODE = 'BC006';
  END IF;
  IF /* guard BC008.token-finished */ EXISTS (SELECT 1 FROM billing.settlement_catch_up_finishes WHERE settlement_dimension_id = dim AND work_generation = generation) THEN
    RAISE EXCEPTION 'billing: catch-up work %/% is finished; its token % writes nothing', dim, generation, token
      USING ERRCODE = 'BC008';
  END IF;
END
$fn$;

CREATE FUNCTION billing.catch_up_fence_settles_by_transition() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF (NEW.settlement_state_revision, NEW.settled_amount) IS DISTINCT FROM (OLD.settlement_state_revision, OLD.settled_amount)
     AND NOT EXISTS (SELECT 1 FROM billing.settlement_transitions
                      WHERE settlement_dimension_id = NEW.settlement_dimension_id
                        AND from_settlement_state_revision = OLD.settlement_state_revision
                        AND to_settlement_state_revision = NEW.settlement_state_revision
                        AND settled_amount_before = OLD.settled_amount AND settled_amount_after = NEW.settled_amount) THEN
    RAISE EXCEPTION 'billing: catch-up fence % settled % (revision %) -> % (revision %) without the transition that moves it',
      OLD.settlement_dimension_id, OLD.settled_amount, OLD.settlement_state_revision, NEW.settled_amount, NEW.settlement_state_revision
      USING ERRCODE = 'BC009';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER settlement_catch_up_fences_transition BEFORE UPDATE ON billing.settlement_catch_up_fences
  FOR EACH ROW EXECUTE FUNCTION billing.catch_up_fence_settles_by_transition();

-- A transition starts where its dimension's fence stands: its from
-- revision and settled amount before are the fence's current ones (the
-- worker inserts it before it moves the fence, under the fence lock).
CREATE FUNCTION billing.catch_up_transition_from_fence() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF /* guard BC010.transition-off-fence */ NOT EXISTS (SELECT 1 FROM billing.settlement_catch_up_fences
                  WHERE settlement_dimension_id = NEW.settlement_dimension_id
                    AND settlement_state_revision = NEW.from_settlement_state_revision
                    AND settled_amount = NEW.settled_amount_before
                    AND billing_reservation_id = NEW.billing_reservation_id
                    AND active_work_generation = NEW.work_generation) THEN
    RAISE EXCEPTION 'billing: transition %/% does not start from its fence''s settled state and active Work',
      NEW.settlement_dimension_id, NEW.from_settlement_state_revision USING ERRCODE = 'BC010';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER settlement_transitions_from_fence BEFORE INSERT ON billing.settlement_transitions
  FOR EACH ROW EXECUTE FUNCTION billing.catch_up_transition_from_fence();

-- At commit a transition has moved its fence (to its revision and settled
-- amount, naming its event: the fence update carries the attempt's token,
-- BC006/BC008) and appended its event.
CREATE FUNCTION billing.prove_settlement_transition() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF /* guard BC011.transition-unproven */ NOT EXISTS (SELECT 1 FROM billing.settlement_catch_up_fences
                  WHERE settlement_dimension_id = NEW.settlement_dimension_id
                    AND settlement_state_revision = NEW.to_settlement_state_revision
                    AND settled_amount = NEW.settled_amount_after AND last_event_id = NEW.event_id)
     OR NOT EXISTS (SELECT 1 FROM outbox.outbox_events
                     WHERE event_id = NEW.event_id AND event_type = 'billing.settlement-transition.committed@1'
                       AND event_envelope_sha256 = NEW.event_envelope_sha256) THEN
    RAISE EXCEPTION 'billing: transition %/% does not commit with its fence move and its event',
      NEW.settlement_dimension_id, NEW.from_settlement_state_revision USING ERRCODE = 'BC011';
  END IF;
  RETURN NULL;
END
$fn$;
CREATE CONSTRAINT TRIGGER settlement_transitions_proven AFTER INSERT ON billing.settlement_transitions
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION billing.prove_settlement_transition();
REVOKE ALL ON FUNCTION billing.prove_finalization_committed(), billing.guard_decision(), billing.prove_fact_event(),
  billing.catch_up_fence_settles_by_transition(), billing.catch_up_transition_from_fence(),
  billing.prove_settlement_transition() FROM PUBLIC;

-- 8. No TRUNCATE, for anyone.
DO $do$
DECLARE
  tbl text;
BEGIN
  FOREACH tbl IN ARRAY ARRAY['billing_finalization_fences', 'billing_finalization_trigger_snapshots', 'billing_finalization_works',
      'closure_watermarks', 'settlement_input_watermarks', 'reservation_states', 'ledger_posting_groups', 'ledger_postings',
      'finalization_evaluations', 'finalization_committed', 'coordinator_receipts', 'finalization_input_manifests',
      'finalization_owner_receipts', 'finalization_validation_bundles', 'finalization_decisions'] LOOP
    EXECUTE format('CREATE TRIGGER %I BEFORE TRUNCATE ON billing.%I FOR EACH STATEMENT EXECUTE FUNCTION billing.reject_change()',
      tbl || '_no_truncate', tbl);
  END LOOP;
  FOREACH tbl IN ARRAY ARRAY['settlement_catch_up_receipts', 'settlement_catch_up_works', 'settlement_transitions',
      'late_settlement_exposures', 'settlement_catch_up_fences', 'settlement_catch_up_finishes', 'settlement_catch_up_claims',
      'settlement_catch_up_attempts', 'settlement_catch_up_blocks'] LOOP
    EXECUTE format('CREATE TRIGGER %I BEFORE TRUNCATE ON billing.%I FOR EACH STATEMENT EXECUTE FUNCTION billing.catch_up_reject_change()',
      tbl || '_no_truncate', tbl);
  END LOOP;
END
$do$;
-- +goose StatementEnd
