-- The late settlement command on Billing's side (issue 32 part 2, ADR-031
-- "终局后变化采用追加式 Transition"; BI-2, BI-3, OP-1).
-- docs/billing-catch-up.md ("Late settlement command") explains the rules.
--
--   funding_accounts           one row per billing account (created lazily by
--       the first funding decision): its funding source revision. A
--       FundingDecision@1 binds the revision it was decided on; the command
--       moves it +1 (compare-and-set), so a decision made on an older
--       account state is stale.
--   funding_decisions          FundingDecision@1, one per command operation
--       and one per case generation (insert-or-compare; a lost response
--       returns the stored one). The first decision moves its case
--       generation open -> resolving.
--   late_consumed_grants / late_consumed_funding_jtis  the two single-use
--       JTIs of a command, consumed in its one ledger transaction.
--   late_settlement_command_results  LateSettlementCommandResult@1, one per
--       command operation, one per exposure; its ledger group, its fence
--       move, its exposure resolution, its resolved case generation and
--       its event commit with it (BC016).
--   late_settlement_exposure_resolutions  BillingCaseResolutionApplied@1:
--       the one resolution of an exposure (an exposure is open exactly
--       while it has none), with its event.
--   late_settlement_cases     no longer insert-only: a forward-only state
--       graph open -> resolving -> resolved (BC017), never deleted.
--   ledger                    group kind late_settlement_adjustment, posted
--       only by billing.post_late_settlement_adjustment from the result
--       (customer_wallet debit, settled_revenue credit, the result's
--       amount); BL006 proves it at commit.
--   catch-up fence            a committed late result moves the fence's
--       settled state one revision (settled amount + adjustment) without a
--       fencing token, with a successor Work generation (BC003, BC006,
--       BC009 accept exactly that move and nothing else). The foreign keys
--       "a state revision > 1 is a transition's to revision" become "a
--       transition's or a late result's" (BC009/BC010 already refuse any
--       other move; the keys are dropped).
--
-- Custom SQLSTATEs added here:
--   BC014 a funding account's source revision that does not start at 1 or
--         move +1
--   BC015 a late result that does not start from its fence's settled state,
--         or whose exposure is not open in a resolving generation
--   BC016 a late result that does not commit with its fence move, ledger
--         group, exposure resolution, resolved generation and event
--   BC017 a late settlement case generation moved outside open ->
--         resolving -> resolved, or deleted
--   (BL009 also refuses a late result or case resolution event without the
--   fact that names it)

-- +goose Up
-- +goose StatementBegin
CREATE TABLE billing.funding_accounts (
  billing_account_id uuid        PRIMARY KEY,
  source_revision    bigint      NOT NULL CHECK (source_revision >= 1),
  created_at         timestamptz NOT NULL,
  updated_at         timestamptz NOT NULL
);
CREATE FUNCTION billing.funding_account_forward() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF /* guard BC014.funding-account-forward */ TG_OP = 'DELETE'
     OR (TG_OP = 'INSERT' AND NEW.source_revision <> 1)
     OR (TG_OP = 'UPDATE' AND (NEW.billing_account_id <> OLD.billing_account_id OR NEW.created_at <> OLD.created_at
                               OR NEW.source_revision <> OLD.source_revision + 1)) THEN
    RAISE EXCEPTION 'billing: funding account source revision starts at 1 and moves +1 only (%)', TG_OP USING ERRCODE = 'BC014';
  END IF;
  IF TG_OP = 'DELETE' THEN
    RETURN OLD;
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER funding_accounts_forward BEFORE INSERT OR UPDATE OR DELETE ON billing.funding_accounts
  FOR EACH ROW EXECUTE FUNCTION billing.funding_account_forward();
CREATE TRIGGER /* guard BC001.funding-accounts-no-truncate */ funding_accounts_no_truncate
  BEFORE TRUNCATE ON billing.funding_accounts FOR EACH STATEMENT EXECUTE FUNCTION billing.catch_up_reject_change();

CREATE TABLE billing.funding_decisions (
  command_operation_id                  uuid        PRIMARY KEY,
  funding_decision_jti                  uuid        NOT NULL UNIQUE,
  settlement_dimension_id               uuid        NOT NULL,
  case_generation                       bigint      NOT NULL,
  late_settlement_exposure_id           uuid        NOT NULL REFERENCES billing.late_settlement_exposures,
  billing_account_id                    uuid        NOT NULL REFERENCES billing.funding_accounts,
  billing_account_source_revision       bigint      NOT NULL CHECK (billing_account_source_revision >= 1),
  funding_policy_revision               bigint      NOT NULL CHECK (funding_policy_revision >= 1),
  funding_amount                        numeric     NOT NULL CHECK (funding_amount > 0),
  decision_ref                          text        NOT NULL UNIQUE,
  decision_schema_version               text        NOT NULL CHECK (decision_schema_version = '1'),
  decision_digest_algorithm_version     text        NOT NULL CHECK (decision_digest_algorithm_version = 'jcs-sha256-v1'),
  decision_digest                       text        NOT NULL CHECK (decision_digest ~ '^[0-9a-f]{64}$'),
  funding_decision_body                 text        NOT NULL,
  valid_until                           timestamptz NOT NULL,
  decided_at                            timestamptz NOT NULL,
  -- One funding decision per case generation: the generation resolves
  -- through exactly one command operation.
  UNIQUE (settlement_dimension_id, case_generation),
  FOREIGN KEY (settlement_dimension_id, case_generation) REFERENCES billing.late_settlement_cases
);
CREATE TRIGGER /* guard BC001.funding-decisions-insert-only */ funding_decisions_insert_only
  BEFORE UPDATE OR DELETE ON billing.funding_decisions FOR EACH ROW EXECUTE FUNCTION billing.catch_up_reject_change();
CREATE TRIGGER /* guard BC001.funding-decisions-no-truncate */ funding_decisions_no_truncate
  BEFORE TRUNCATE ON billing.funding_decisions FOR EACH STATEMENT EXECUTE FUNCTION billing.catch_up_reject_change();

CREATE TABLE billing.late_consumed_grants (
  grant_jti            uuid        PRIMARY KEY,
  grant_sha256         text        NOT NULL UNIQUE CHECK (grant_sha256 ~ '^[0-9a-f]{64}$'),
  command_operation_id uuid        NOT NULL UNIQUE,
  consumed_at          timestamptz NOT NULL
);
CREATE TRIGGER /* guard BC001.late-grants-insert-only */ late_consumed_grants_insert_only
  BEFORE UPDATE OR DELETE ON billing.late_consumed_grants FOR EACH ROW EXECUTE FUNCTION billing.catch_up_reject_change();
CREATE TRIGGER /* guard BC001.late-grants-no-truncate */ late_consumed_grants_no_truncate
  BEFORE TRUNCATE ON billing.late_consumed_grants FOR EACH STATEMENT EXECUTE FUNCTION billing.catch_up_reject_change();

CREATE TABLE billing.late_consumed_funding_jtis (
  funding_decision_jti uuid        PRIMARY KEY REFERENCES billing.funding_decisions (funding_decision_jti),
  command_operation_id uuid        NOT NULL UNIQUE REFERENCES billing.funding_decisions (command_operation_id),
  consumed_at          timestamptz NOT NULL
);
CREATE TRIGGER /* guard BC001.late-funding-jtis-insert-only */ late_consumed_funding_jtis_insert_only
  BEFORE UPDATE OR DELETE ON billing.late_consumed_funding_jtis FOR EACH ROW EXECUTE FUNCTION billing.catch_up_reject_change();
CREATE TRIGGER /* guard BC001.late-funding-jtis-no-truncate */ late_consumed_funding_jtis_no_truncate
  BEFORE TRUNCATE ON billing.late_consumed_funding_jtis FOR EACH STATEMENT EXECUTE FUNCTION billing.catch_up_reject_change();

CREATE TABLE billing.late_settlement_command_results (
  command_operation_id             uuid        PRIMARY KEY REFERENCES billing.funding_decisions,
  settlement_dimension_id          uuid        NOT NULL,
  from_settlement_state_revision   bigint      NOT NULL CHECK (from_settlement_state_revision >= 2),
  to_settlement_state_revision     bigint      NOT NULL,
  billing_reservation_id           uuid        NOT NULL,
  billing_account_id               uuid        NOT NULL,
  late_settlement_exposure_id      uuid        NOT NULL UNIQUE REFERENCES billing.late_settlement_exposures,
  case_generation                  bigint      NOT NULL,
  settled_amount_before            numeric     NOT NULL CHECK (settled_amount_before >= 0),
  settled_amount_after             numeric     NOT NULL,
  adjustment_amount                numeric     NOT NULL CHECK (adjustment_amount > 0),
  grant_jti                        uuid        NOT NULL UNIQUE REFERENCES billing.late_consumed_grants,
  funding_decision_jti             uuid        NOT NULL UNIQUE REFERENCES billing.late_consumed_funding_jtis,
  posting_group_id                 uuid        NOT NULL UNIQUE,
  result_ref                       text        NOT NULL UNIQUE,
  result_schema_version            text        NOT NULL CHECK (result_schema_version = '1'),
  result_digest_algorithm_version  text        NOT NULL CHECK (result_digest_algorithm_version = 'jcs-sha256-v1'),
  result_digest                    text        NOT NULL CHECK (result_digest ~ '^[0-9a-f]{64}$'),
  result_body                      text        NOT NULL,
  event_id                         uuid        NOT NULL UNIQUE,
  event_envelope_sha256            text        NOT NULL CHECK (event_envelope_sha256 ~ '^[0-9a-f]{64}$'),
  committed_at                     timestamptz NOT NULL,
  UNIQUE (settlement_dimension_id, from_settlement_state_revision),
  UNIQUE (settlement_dimension_id, to_settlement_state_revision),
  UNIQUE (settlement_dimension_id, case_generation),
  CHECK (to_settlement_state_revision = from_settlement_state_revision + 1),
  CHECK (settled_amount_after = settled_amount_before + adjustment_amount),
  FOREIGN KEY (settlement_dimension_id, case_generation) REFERENCES billing.late_settlement_cases
);
CREATE TRIGGER /* guard BC001.late-results-insert-only */ late_settlement_command_results_insert_only
  BEFORE UPDATE OR DELETE ON billing.late_settlement_command_results FOR EACH ROW EXECUTE FUNCTION billing.catch_up_reject_change();
CREATE TRIGGER /* guard BC001.late-results-no-truncate */ late_settlement_command_results_no_truncate
  BEFORE TRUNCATE ON billing.late_settlement_command_results FOR EACH STATEMENT EXECUTE FUNCTION billing.catch_up_reject_change();

-- BillingCaseResolutionApplied@1: the one resolution of one exposure.
CREATE TABLE billing.late_settlement_exposure_resolutions (
  late_settlement_exposure_id      uuid        PRIMARY KEY REFERENCES billing.late_settlement_exposures,
  settlement_dimension_id          uuid        NOT NULL,
  case_generation                  bigint      NOT NULL,
  resolution_operation_id          uuid        NOT NULL UNIQUE,
  resolution_source                text        NOT NULL CHECK (resolution_source IN ('late_settlement_command', 'settlement_transition')),
  command_operation_id             uuid        UNIQUE REFERENCES billing.late_settlement_command_results,
  transition_to_revision           bigint,
  applied_ref                      text        NOT NULL UNIQUE,
  applied_schema_version           text        NOT NULL CHECK (applied_schema_version = '1'),
  applied_digest_algorithm_version text        NOT NULL CHECK (applied_digest_algorithm_version = 'jcs-sha256-v1'),
  applied_digest                   text        NOT NULL CHECK (applied_digest ~ '^[0-9a-f]{64}$'),
  applied_body                     text        NOT NULL,
  event_id                         uuid        NOT NULL UNIQUE,
  event_envelope_sha256            text        NOT NULL CHECK (event_envelope_sha256 ~ '^[0-9a-f]{64}$'),
  applied_at                       timestamptz NOT NULL,
  CHECK ((resolution_source = 'late_settlement_command') = (command_operation_id IS NOT NULL)),
  CHECK ((resolution_source = 'settlement_transition') = (transition_to_revision IS NOT NULL)),
  FOREIGN KEY (settlement_dimension_id, transition_to_revision)
    REFERENCES billing.settlement_transitions (settlement_dimension_id, to_settlement_state_revision)
);
CREATE INDEX late_settlement_exposure_resolutions_dimension ON billing.late_settlement_exposure_resolutions (settlement_dimension_id);
CREATE TRIGGER /* guard BC001.exposure-resolutions-insert-only */ late_settlement_exposure_resolutions_insert_only
  BEFORE UPDATE OR DELETE ON billing.late_settlement_exposure_resolutions FOR EACH ROW EXECUTE FUNCTION billing.catch_up_reject_change();
CREATE TRIGGER /* guard BC001.exposure-resolutions-no-truncate */ late_settlement_exposure_resolutions_no_truncate
  BEFORE TRUNCATE ON billing.late_settlement_exposure_resolutions FOR EACH STATEMENT EXECUTE FUNCTION billing.catch_up_reject_change();

-- Case generations: forward only, never deleted. open -> resolving only
-- with the generation's funding decision; resolving -> resolved only with
-- its late result.
DROP TRIGGER late_settlement_cases_insert_only ON billing.late_settlement_cases;
CREATE FUNCTION billing.late_case_forward() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF /* guard BC017.late-case-forward */ TG_OP = 'DELETE'
     OR (NEW.settlement_dimension_id, NEW.case_generation, NEW.reconciliation_case_ref, NEW.case_identity_ref, NEW.case_identity_digest,
         NEW.case_request_operation_id, NEW.predecessor_generation, NEW.billing_reservation_id, NEW.billing_account_id, NEW.opened_at)
        IS DISTINCT FROM
        (OLD.settlement_dimension_id, OLD.case_generation, OLD.reconciliation_case_ref, OLD.case_identity_ref, OLD.case_identity_digest,
         OLD.case_request_operation_id, OLD.predecessor_generation, OLD.billing_reservation_id, OLD.billing_account_id, OLD.opened_at)
     OR NOT ((OLD.state = 'open' AND NEW.state = 'resolving'
              AND EXISTS (SELECT 1 FROM billing.funding_decisions d
                           WHERE d.settlement_dimension_id = NEW.settlement_dimension_id AND d.case_generation = NEW.case_generation))
          OR (OLD.state = 'resolving' AND NEW.state = 'resolved'
              AND EXISTS (SELECT 1 FROM billing.late_settlement_command_results r
                           WHERE r.settlement_dimension_id = NEW.settlement_dimension_id AND r.case_generation = NEW.case_generation))) THEN
    RAISE EXCEPTION 'billing: late settlement case %/% moves only open -> resolving -> resolved (with its funding decision, then its result)',
      OLD.settlement_dimension_id, OLD.case_generation USING ERRCODE = 'BC017';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER late_settlement_cases_forward BEFORE UPDATE OR DELETE ON billing.late_settlement_cases
  FOR EACH ROW EXECUTE FUNCTION billing.late_case_forward();

-- The ledger: a late settlement adjustment group names its result.
ALTER TABLE billing.ledger_posting_groups DROP CONSTRAINT ledger_posting_groups_group_kind_check;
ALTER TABLE billing.ledger_posting_groups ADD CONSTRAINT ledger_posting_groups_group_kind_check
  CHECK (group_kind IN ('reservation_hold', 'finalization', 'settlement_transition', 'late_settlement_adjustment'));
ALTER TABLE billing.ledger_posting_groups
  ADD COLUMN late_command_operation_id uuid UNIQUE REFERENCES billing.late_settlement_command_results DEFERRABLE INITIALLY DEFERRED,
  ADD CONSTRAINT ledger_group_late_result CHECK ((group_kind = 'late_settlement_adjustment') = (late_command_operation_id IS NOT NULL));

CREATE OR REPLACE FUNCTION billing.prove_posting_group(p_group uuid) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  g billing.ledger_posting_groups;
  r billing.reservation_states;
  c billing.finalization_committed;
  t billing.settlement_transitions;
  l billing.late_settlement_command_results;
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
  IF /* guard BL004.group-unbalanced */ debits <> credits OR lines < 2 THEN
    RAISE EXCEPTION 'billing: posting group % is not balanced (debits %, credits %, % lines)', g.posting_group_id, debits, credits, lines
      USING ERRCODE = 'BL004';
  END IF;
  IF /* guard BL004.group-off-identity */ off_identity > 0 OR g.economic_identity <> r.economic_identity THEN
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
  WHEN 'late_settlement_adjustment' THEN
    -- A funded post-release adjustment: the wallet to settled revenue, the
    -- late result's amount, the group the result names.
    SELECT * INTO l FROM billing.late_settlement_command_results WHERE command_operation_id = g.late_command_operation_id;
    want := FOUND AND l.billing_reservation_id = g.billing_reservation_id AND l.posting_group_id = g.posting_group_id
      AND lines = 2 AND wallet_dr = l.adjustment_amount AND revenue_cr = l.adjustment_amount;
  ELSE
    want := false;
  END CASE;
  IF /* guard BL006.group-off-fact */ NOT want THEN
    RAISE EXCEPTION 'billing: % posting group % is not exactly the amounts of the fact that justifies it', g.group_kind, g.posting_group_id
      USING ERRCODE = 'BL006';
  END IF;
  SELECT string_agg(format('%s %s', account_kind, balance), ', ') INTO negative
    FROM (SELECT account_kind,
                 sum(CASE WHEN (account_kind = 'customer_wallet') = (direction = 'debit') THEN amount ELSE -amount END) AS balance
            FROM billing.ledger_postings WHERE billing_reservation_id = g.billing_reservation_id
           GROUP BY account_kind) b
   WHERE balance < 0;
  IF /* guard BL010.negative-balance */ negative IS NOT NULL THEN
    RAISE EXCEPTION 'billing: reservation % would have a negative balance (%)', g.billing_reservation_id, negative
      USING ERRCODE = 'BL010';
  END IF;
END
$fn$;

-- The controlled writer of a late settlement adjustment: the lines derive
-- from the result (never passed in).
CREATE FUNCTION billing.post_late_settlement_adjustment(p_command_operation_id uuid, p_group uuid)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  l billing.late_settlement_command_results;
  r billing.reservation_states;
BEGIN
  SELECT * INTO l FROM billing.late_settlement_command_results WHERE command_operation_id = p_command_operation_id;
  SELECT * INTO r FROM billing.reservation_states WHERE billing_reservation_id = l.billing_reservation_id FOR NO KEY UPDATE;
  IF /* guard BL006.late-adjustment-unfounded */ l.command_operation_id IS NULL OR l.posting_group_id IS DISTINCT FROM p_group
     OR r.state IS NULL OR r.state = 'reserved' THEN
    RAISE EXCEPTION 'billing: a late settlement adjustment posts only its committed result''s group on a finalized reservation (%)',
      p_command_operation_id USING ERRCODE = 'BL006';
  END IF;
  INSERT INTO billing.ledger_posting_groups (posting_group_id, billing_reservation_id, group_kind, economic_identity, created_at,
      late_command_operation_id)
  VALUES (p_group, r.billing_reservation_id, 'late_settlement_adjustment', r.economic_identity, l.committed_at, l.command_operation_id);
  INSERT INTO billing.ledger_postings (posting_group_id, line_no, billing_reservation_id, billing_account_id, economic_identity,
      account_kind, direction, amount, posted_at)
  VALUES (p_group, 1, r.billing_reservation_id, r.billing_account_id, r.economic_identity, 'customer_wallet', 'debit', l.adjustment_amount, l.committed_at),
         (p_group, 2, r.billing_reservation_id, r.billing_account_id, r.economic_identity, 'settled_revenue', 'credit', l.adjustment_amount, l.committed_at);
END
$fn$;

-- Does a committed late result move the fence from (rev, settled) to (rev', settled')?
CREATE FUNCTION billing.late_result_moves(p_dim uuid, p_from bigint, p_to bigint, p_before numeric, p_after numeric)
RETURNS boolean LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
  SELECT EXISTS (SELECT 1 FROM billing.late_settlement_command_results
                  WHERE settlement_dimension_id = p_dim AND from_settlement_state_revision = p_from
                    AND to_settlement_state_revision = p_to AND settled_amount_before = p_before AND settled_amount_after = p_after)
$fn$;

-- BC003: the settled amount rises only with a late result.
CREATE OR REPLACE FUNCTION billing.catch_up_fence_forward() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  wm billing.settlement_input_watermarks;
BEGIN
  IF /* guard BC003.fence-identity */ (NEW.settlement_dimension_id, NEW.billing_reservation_id, NEW.billing_account_id, NEW.run_id, NEW.run_step_id,
      NEW.execution_attempt_id, NEW.charge_dimension_key, NEW.economic_identity, NEW.finalization_committed_ref,
      NEW.finalization_committed_digest, NEW.finalization_event_id, NEW.created_at)
     IS DISTINCT FROM
     (OLD.settlement_dimension_id, OLD.billing_reservation_id, OLD.billing_account_id, OLD.run_id, OLD.run_step_id,
      OLD.execution_attempt_id, OLD.charge_dimension_key, OLD.economic_identity, OLD.finalization_committed_ref,
      OLD.finalization_committed_digest, OLD.finalization_event_id, OLD.created_at) THEN
    RAISE EXCEPTION 'billing: catch-up fence % identity is frozen', OLD.settlement_dimension_id USING ERRCODE = 'BC003';
  END IF;
  IF /* guard BC003.fence-graph */ NEW.fence_revision <> OLD.fence_revision + 1
     OR NEW.settlement_state_revision NOT IN (OLD.settlement_state_revision, OLD.settlement_state_revision + 1)
     OR NEW.active_work_generation NOT IN (OLD.active_work_generation, OLD.active_work_generation + 1)
     -- a transition always comes with its successor Work
     OR (NEW.settlement_state_revision > OLD.settlement_state_revision AND NEW.active_work_generation = OLD.active_work_generation)
     OR NEW.last_evaluated_state_version < OLD.last_evaluated_state_version
     -- reconcile_before_charge: nothing is charged automatically after
     -- release; only a funded late settlement command's result raises it
     OR (NEW.settled_amount > OLD.settled_amount
         AND NOT billing.late_result_moves(OLD.settlement_dimension_id, OLD.settlement_state_revision, NEW.settlement_state_revision,
                                           OLD.settled_amount, NEW.settled_amount)) THEN
    RAISE EXCEPTION 'billing: catch-up fence % change outside its graph (revision % -> %, state % -> %, generation % -> %)',
      OLD.settlement_dimension_id, OLD.fence_revision, NEW.fence_revision, OLD.settlement_state_revision,
      NEW.settlement_state_revision, OLD.active_work_generation, NEW.active_work_generation USING ERRCODE = 'BC003';
  END IF;
  IF NEW.coordination_state = 'caught_up' THEN
    SELECT * INTO wm FROM billing.settlement_input_watermarks
    WHERE billing_reservation_id = NEW.billing_reservation_id AND settlement_dimension_id = NEW.settlement_dimension_id;
    IF /* guard BC004.caught-up-ahead */ FOUND AND wm.settlement_input_state_version > NEW.last_evaluated_state_version THEN
      RAISE EXCEPTION 'billing: catch-up fence % cannot be caught_up: watermark % is ahead of %',
        NEW.settlement_dimension_id, wm.settlement_input_state_version, NEW.last_evaluated_state_version USING ERRCODE = 'BC004';
    END IF;
  END IF;
  RETURN NEW;
END
$fn$;

-- BC006: a token-less fence update is the consumer's reopen, or the late
-- settlement command's move: the next generation, pending_verification,
-- the evaluated input unchanged, and a settled state that moves only as
-- its committed late result says (naming the result's event).
CREATE OR REPLACE FUNCTION billing.catch_up_fence_fenced() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF NEW.attempt_fencing_token IS NOT NULL THEN
    PERFORM billing.catch_up_require_latest_token(OLD.settlement_dimension_id, OLD.active_work_generation, NEW.attempt_fencing_token);
  ELSIF /* guard BC006.tokenless-not-reopen */ NEW.active_work_generation <> OLD.active_work_generation + 1 OR NEW.coordination_state <> 'pending_verification'
     OR (NEW.last_evaluated_ref, NEW.last_evaluated_state_version) IS DISTINCT FROM (OLD.last_evaluated_ref, OLD.last_evaluated_state_version)
     OR ((NEW.settlement_state_revision, NEW.settled_amount, NEW.last_event_id)
          IS DISTINCT FROM (OLD.settlement_state_revision, OLD.settled_amount, OLD.last_event_id)
         AND NOT EXISTS (SELECT 1 FROM billing.late_settlement_command_results
                          WHERE settlement_dimension_id = OLD.settlement_dimension_id
                            AND from_settlement_state_revision = OLD.settlement_state_revision
                            AND to_settlement_state_revision = NEW.settlement_state_revision
                            AND settled_amount_before = OLD.settled_amount AND settled_amount_after = NEW.settled_amount
                            AND event_id = NEW.last_event_id)) THEN
    RAISE EXCEPTION 'billing: catch-up fence % changed without a fencing token (only a reopen to the next generation, or a late result''s move, may)',
      OLD.settlement_dimension_id USING ERRCODE = 'BC006';
  END IF;
  RETURN NEW;
END
$fn$;

-- BC009: the settled state moves with the transition or the late result that moves it.
CREATE OR REPLACE FUNCTION billing.catch_up_fence_settles_by_transition() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF /* guard BC009.settled-without-transition */ (NEW.settlement_state_revision, NEW.settled_amount) IS DISTINCT FROM (OLD.settlement_state_revision, OLD.settled_amount)
     AND NOT EXISTS (SELECT 1 FROM billing.settlement_transitions
                      WHERE settlement_dimension_id = NEW.settlement_dimension_id
                        AND from_settlement_state_revision = OLD.settlement_state_revision
                        AND to_settlement_state_revision = NEW.settlement_state_revision
                        AND settled_amount_before = OLD.settled_amount AND settled_amount_after = NEW.settled_amount)
     AND NOT billing.late_result_moves(NEW.settlement_dimension_id, OLD.settlement_state_revision, NEW.settlement_state_revision,
                                       OLD.settled_amount, NEW.settled_amount) THEN
    RAISE EXCEPTION 'billing: catch-up fence % settled % (revision %) -> % (revision %) without the transition or late result that moves it',
      OLD.settlement_dimension_id, OLD.settled_amount, OLD.settlement_state_revision, NEW.settled_amount, NEW.settlement_state_revision
      USING ERRCODE = 'BC009';
  END IF;
  RETURN NEW;
END
$fn$;

-- "A state revision > 1 is a transition's to revision" (fence) and "a
-- transition from > 1 follows the transition to its from" become "... or
-- a late result's": BC009 refuses any other fence move and BC010 makes a
-- transition start from the fence, so the two keys are dropped.
DO $do$
DECLARE
  c record;
BEGIN
  FOR c IN SELECT conname, conrelid::regclass AS rel FROM pg_constraint
            WHERE contype = 'f' AND confrelid = 'billing.settlement_transitions'::regclass
              AND conrelid IN ('billing.settlement_catch_up_fences'::regclass, 'billing.settlement_transitions'::regclass) LOOP
    EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', c.rel, c.conname);
  END LOOP;
END
$do$;

-- A late result starts where its fence stands, on an open exposure of a
-- resolving generation (BC015), and commits with everything it states (BC016).
CREATE FUNCTION billing.late_result_from_fence() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF /* guard BC015.late-result-off-fence */ NOT EXISTS (SELECT 1 FROM billing.settlement_catch_up_fences
                  WHERE settlement_dimension_id = NEW.settlement_dimension_id
                    AND settlement_state_revision = NEW.from_settlement_state_revision
                    AND settled_amount = NEW.settled_amount_before
                    AND billing_reservation_id = NEW.billing_reservation_id)
     OR NOT EXISTS (SELECT 1 FROM billing.late_settlement_exposures e
                     JOIN billing.late_settlement_cases c
                       ON c.settlement_dimension_id = e.settlement_dimension_id AND c.case_generation = e.case_generation
                    WHERE e.late_settlement_exposure_id = NEW.late_settlement_exposure_id
                      AND e.settlement_dimension_id = NEW.settlement_dimension_id
                      AND e.case_generation = NEW.case_generation AND e.exposure_amount = NEW.adjustment_amount
                      AND c.state = 'resolving')
     OR EXISTS (SELECT 1 FROM billing.late_settlement_exposure_resolutions
                 WHERE late_settlement_exposure_id = NEW.late_settlement_exposure_id) THEN
    RAISE EXCEPTION 'billing: late result % does not start from its fence''s settled state on an open exposure of a resolving generation',
      NEW.command_operation_id USING ERRCODE = 'BC015';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER late_settlement_command_results_from_fence BEFORE INSERT ON billing.late_settlement_command_results
  FOR EACH ROW EXECUTE FUNCTION billing.late_result_from_fence();

CREATE FUNCTION billing.prove_late_result() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  missing text;
BEGIN
  missing := CASE
    WHEN NOT EXISTS (SELECT 1 FROM billing.settlement_catch_up_fences
                      WHERE settlement_dimension_id = NEW.settlement_dimension_id
                        AND settlement_state_revision = NEW.to_settlement_state_revision
                        AND settled_amount = NEW.settled_amount_after AND last_event_id = NEW.event_id)
      THEN 'its fence move'
    WHEN NOT EXISTS (SELECT 1 FROM billing.ledger_posting_groups
                      WHERE posting_group_id = NEW.posting_group_id AND group_kind = 'late_settlement_adjustment'
                        AND late_command_operation_id = NEW.command_operation_id)
      THEN 'its ledger group'
    WHEN NOT EXISTS (SELECT 1 FROM billing.late_settlement_exposure_resolutions
                      WHERE late_settlement_exposure_id = NEW.late_settlement_exposure_id
                        AND command_operation_id = NEW.command_operation_id)
      THEN 'its exposure resolution'
    WHEN NOT EXISTS (SELECT 1 FROM billing.late_settlement_cases
                      WHERE settlement_dimension_id = NEW.settlement_dimension_id AND case_generation = NEW.case_generation
                        AND state = 'resolved')
      THEN 'its resolved case generation'
    WHEN NOT EXISTS (SELECT 1 FROM outbox.outbox_events
                      WHERE event_id = NEW.event_id AND event_type = 'billing.late-settlement-command-result.committed@1'
                        AND event_envelope_sha256 = NEW.event_envelope_sha256)
      OR NOT EXISTS (SELECT 1 FROM outbox.outbox_events o JOIN billing.late_settlement_exposure_resolutions x
                             ON x.event_id = o.event_id AND x.event_envelope_sha256 = o.event_envelope_sha256
                      WHERE x.command_operation_id = NEW.command_operation_id
                        AND o.event_type = 'billing.case-resolution.applied@1')
      THEN 'its events'
    END;
  IF /* guard BC016.late-result-unproven */ missing IS NOT NULL THEN
    RAISE EXCEPTION 'billing: late result % does not commit with %', NEW.command_operation_id, missing USING ERRCODE = 'BC016';
  END IF;
  RETURN NULL;
END
$fn$;
CREATE CONSTRAINT TRIGGER late_settlement_command_results_proven AFTER INSERT ON billing.late_settlement_command_results
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION billing.prove_late_result();

-- billing.late-settlement-command-result.committed@1 and
-- billing.case-resolution.applied@1 are appended only with the one fact
-- that names them (as BL009 for the finalization and transition events).
CREATE FUNCTION billing.prove_late_fact_event() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF /* guard BL009.late-event-unbacked */ NOT (CASE NEW.event_type
            WHEN 'billing.late-settlement-command-result.committed@1' THEN
              EXISTS (SELECT 1 FROM billing.late_settlement_command_results
                       WHERE event_id = NEW.event_id AND event_envelope_sha256 = NEW.event_envelope_sha256
                         AND settlement_dimension_id::text = NEW.aggregate_id
                         AND from_settlement_state_revision = NEW.aggregate_revision)
            ELSE
              EXISTS (SELECT 1 FROM billing.late_settlement_exposure_resolutions
                       WHERE event_id = NEW.event_id AND event_envelope_sha256 = NEW.event_envelope_sha256
                         AND late_settlement_exposure_id::text = NEW.aggregate_id)
          END) THEN
    RAISE EXCEPTION 'billing: event % (%) has no billing fact naming it', NEW.event_id, NEW.event_type USING ERRCODE = 'BL009';
  END IF;
  RETURN NULL;
END
$fn$;
CREATE CONSTRAINT TRIGGER billing_late_fact_events_proven AFTER INSERT ON outbox.outbox_events
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (NEW.event_type IN ('billing.late-settlement-command-result.committed@1', 'billing.case-resolution.applied@1'))
  EXECUTE FUNCTION billing.prove_late_fact_event();

REVOKE ALL ON billing.funding_accounts, billing.funding_decisions, billing.late_consumed_grants, billing.late_consumed_funding_jtis,
  billing.late_settlement_command_results, billing.late_settlement_exposure_resolutions FROM PUBLIC;
REVOKE ALL ON FUNCTION billing.funding_account_forward(), billing.late_case_forward(),
  billing.post_late_settlement_adjustment(uuid, uuid), billing.late_result_moves(uuid, bigint, bigint, numeric, numeric),
  billing.late_result_from_fence(), billing.prove_late_result(), billing.prove_late_fact_event() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION billing.funding_account_forward(), billing.late_case_forward(), billing.late_result_from_fence(),
  billing.post_late_settlement_adjustment(uuid, uuid), billing.late_result_moves(uuid, bigint, bigint, numeric, numeric)
  TO oceanway_billing;
GRANT SELECT, INSERT ON billing.funding_accounts, billing.funding_decisions, billing.late_consumed_grants,
  billing.late_consumed_funding_jtis, billing.late_settlement_command_results, billing.late_settlement_exposure_resolutions
  TO oceanway_billing;
GRANT UPDATE (source_revision, updated_at) ON billing.funding_accounts TO oceanway_billing;
GRANT UPDATE (state) ON billing.late_settlement_cases TO oceanway_billing;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
SELECT 'down migration not supported for 00048' WHERE false;
-- +goose StatementEnd
