-- Guard clauses (issue 37; docs/guard-clauses.md): every refusal is its
-- own clause, marked with its ID and proven by a test that fails when only
-- that clause is disabled. Behaviour is unchanged except where stated.
--
--   1. billing.check_finalized_reservation (00002, BL005): the one IF that
--      ORed five refusals is split so each is its own clause, in the same
--      order — the hold is empty, revenue holds the settled amount, the
--      wallet keeps exactly the settled amount, the finalization group
--      exists, the committed fact the reservation names exists with its
--      amounts. The SQLSTATE and the message are unchanged; each clause adds
--      a DETAIL naming what does not add up.
--   2. ledger_balances_no_delete (00001) went with its table when 00040
--      replaced billing.ledger_balances by a view; the DROP below is a no-op
--      that states so (the clause index replays CREATE/DROP TRIGGER, not
--      DROP TABLE).
--   3. 00040's TRUNCATE guards, created in a DO loop the clause index cannot
--      read, are re-created one by one (same name, table, timing and
--      function) so each carries its clause.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION billing.check_finalized_reservation() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  hold numeric;
  revenue numeric;
  wallet numeric;
BEGIN
  IF NEW.state = 'reserved' THEN
    RETURN NULL;
  END IF;
  SELECT COALESCE(sum(balance) FILTER (WHERE account_kind = 'reservation_hold'), 0),
         COALESCE(sum(balance) FILTER (WHERE account_kind = 'settled_revenue'), 0),
         COALESCE(sum(balance) FILTER (WHERE account_kind = 'customer_wallet'), 0)
    INTO hold, revenue, wallet
    FROM billing.ledger_balances WHERE billing_reservation_id = NEW.billing_reservation_id;
  IF /* guard BL005.hold-not-empty */ hold <> 0 THEN
    RAISE EXCEPTION 'billing: reservation % is % but its ledger holds %, settled % (wallet %), want settled % + released % = reserved %',
      NEW.billing_reservation_id, NEW.state, hold, revenue, wallet, NEW.settled_amount, NEW.released_amount, NEW.reserved_amount
      USING ERRCODE = 'BL005', DETAIL = 'the reservation hold is not empty';
  END IF;
  IF /* guard BL005.revenue-not-settled */ revenue <> NEW.settled_amount THEN
    RAISE EXCEPTION 'billing: reservation % is % but its ledger holds %, settled % (wallet %), want settled % + released % = reserved %',
      NEW.billing_reservation_id, NEW.state, hold, revenue, wallet, NEW.settled_amount, NEW.released_amount, NEW.reserved_amount
      USING ERRCODE = 'BL005', DETAIL = 'settled revenue is not the settled amount';
  END IF;
  IF /* guard BL005.wallet-not-settled */ wallet <> NEW.settled_amount THEN
    RAISE EXCEPTION 'billing: reservation % is % but its ledger holds %, settled % (wallet %), want settled % + released % = reserved %',
      NEW.billing_reservation_id, NEW.state, hold, revenue, wallet, NEW.settled_amount, NEW.released_amount, NEW.reserved_amount
      USING ERRCODE = 'BL005', DETAIL = 'the wallet does not keep exactly the settled amount';
  END IF;
  IF /* guard BL005.no-finalization-group */ NOT EXISTS (SELECT 1 FROM billing.ledger_posting_groups
                  WHERE billing_reservation_id = NEW.billing_reservation_id AND group_kind = 'finalization') THEN
    RAISE EXCEPTION 'billing: reservation % is % but its ledger holds %, settled % (wallet %), want settled % + released % = reserved %',
      NEW.billing_reservation_id, NEW.state, hold, revenue, wallet, NEW.settled_amount, NEW.released_amount, NEW.reserved_amount
      USING ERRCODE = 'BL005', DETAIL = 'no finalization posting group';
  END IF;
  IF /* guard BL005.no-committed-fact */ NOT EXISTS (SELECT 1 FROM billing.finalization_committed
                  WHERE committed_ref = NEW.committed_ref AND billing_reservation_id = NEW.billing_reservation_id
                    AND settled_amount = NEW.settled_amount AND released_amount = NEW.released_amount) THEN
    RAISE EXCEPTION 'billing: reservation % is % but its ledger holds %, settled % (wallet %), want settled % + released % = reserved %',
      NEW.billing_reservation_id, NEW.state, hold, revenue, wallet, NEW.settled_amount, NEW.released_amount, NEW.reserved_amount
      USING ERRCODE = 'BL005', DETAIL = 'no committed fact names the reservation with these amounts';
  END IF;
  RETURN NULL;
END
$fn$;

DROP TRIGGER IF EXISTS ledger_balances_no_delete ON billing.ledger_balances;

-- 3. The TRUNCATE guards of 00040 (created in a loop) are re-created one by
-- one, the same triggers on the same functions, so each carries its clause.

DROP TRIGGER billing_finalization_fences_no_truncate ON billing.billing_finalization_fences;
CREATE TRIGGER /* guard BL001.fences-no-truncate */ billing_finalization_fences_no_truncate BEFORE TRUNCATE ON billing.billing_finalization_fences
  FOR EACH STATEMENT EXECUTE FUNCTION billing.reject_change();
DROP TRIGGER billing_finalization_trigger_snapshots_no_truncate ON billing.billing_finalization_trigger_snapshots;
CREATE TRIGGER /* guard BL001.trigger-snapshots-no-truncate */ billing_finalization_trigger_snapshots_no_truncate BEFORE TRUNCATE ON billing.billing_finalization_trigger_snapshots
  FOR EACH STATEMENT EXECUTE FUNCTION billing.reject_change();
DROP TRIGGER billing_finalization_works_no_truncate ON billing.billing_finalization_works;
CREATE TRIGGER /* guard BL001.works-no-truncate */ billing_finalization_works_no_truncate BEFORE TRUNCATE ON billing.billing_finalization_works
  FOR EACH STATEMENT EXECUTE FUNCTION billing.reject_change();
DROP TRIGGER closure_watermarks_no_truncate ON billing.closure_watermarks;
CREATE TRIGGER /* guard BL001.closure-watermarks-no-truncate */ closure_watermarks_no_truncate BEFORE TRUNCATE ON billing.closure_watermarks
  FOR EACH STATEMENT EXECUTE FUNCTION billing.reject_change();
DROP TRIGGER settlement_input_watermarks_no_truncate ON billing.settlement_input_watermarks;
CREATE TRIGGER /* guard BL001.settlement-input-watermarks-no-truncate */ settlement_input_watermarks_no_truncate BEFORE TRUNCATE ON billing.settlement_input_watermarks
  FOR EACH STATEMENT EXECUTE FUNCTION billing.reject_change();
DROP TRIGGER reservation_states_no_truncate ON billing.reservation_states;
CREATE TRIGGER /* guard BL001.reservation-states-no-truncate */ reservation_states_no_truncate BEFORE TRUNCATE ON billing.reservation_states
  FOR EACH STATEMENT EXECUTE FUNCTION billing.reject_change();
DROP TRIGGER ledger_posting_groups_no_truncate ON billing.ledger_posting_groups;
CREATE TRIGGER /* guard BL001.posting-groups-no-truncate */ ledger_posting_groups_no_truncate BEFORE TRUNCATE ON billing.ledger_posting_groups
  FOR EACH STATEMENT EXECUTE FUNCTION billing.reject_change();
DROP TRIGGER ledger_postings_no_truncate ON billing.ledger_postings;
CREATE TRIGGER /* guard BL001.postings-no-truncate */ ledger_postings_no_truncate BEFORE TRUNCATE ON billing.ledger_postings
  FOR EACH STATEMENT EXECUTE FUNCTION billing.reject_change();
DROP TRIGGER finalization_evaluations_no_truncate ON billing.finalization_evaluations;
CREATE TRIGGER /* guard BL001.evaluations-no-truncate */ finalization_evaluations_no_truncate BEFORE TRUNCATE ON billing.finalization_evaluations
  FOR EACH STATEMENT EXECUTE FUNCTION billing.reject_change();
DROP TRIGGER finalization_committed_no_truncate ON billing.finalization_committed;
CREATE TRIGGER /* guard BL001.committed-no-truncate */ finalization_committed_no_truncate BEFORE TRUNCATE ON billing.finalization_committed
  FOR EACH STATEMENT EXECUTE FUNCTION billing.reject_change();
DROP TRIGGER coordinator_receipts_no_truncate ON billing.coordinator_receipts;
CREATE TRIGGER /* guard BL001.coordinator-receipts-no-truncate */ coordinator_receipts_no_truncate BEFORE TRUNCATE ON billing.coordinator_receipts
  FOR EACH STATEMENT EXECUTE FUNCTION billing.reject_change();
DROP TRIGGER finalization_input_manifests_no_truncate ON billing.finalization_input_manifests;
CREATE TRIGGER /* guard BL001.input-manifests-no-truncate */ finalization_input_manifests_no_truncate BEFORE TRUNCATE ON billing.finalization_input_manifests
  FOR EACH STATEMENT EXECUTE FUNCTION billing.reject_change();
DROP TRIGGER finalization_owner_receipts_no_truncate ON billing.finalization_owner_receipts;
CREATE TRIGGER /* guard BL001.owner-receipts-no-truncate */ finalization_owner_receipts_no_truncate BEFORE TRUNCATE ON billing.finalization_owner_receipts
  FOR EACH STATEMENT EXECUTE FUNCTION billing.reject_change();
DROP TRIGGER finalization_validation_bundles_no_truncate ON billing.finalization_validation_bundles;
CREATE TRIGGER /* guard BL001.validation-bundles-no-truncate */ finalization_validation_bundles_no_truncate BEFORE TRUNCATE ON billing.finalization_validation_bundles
  FOR EACH STATEMENT EXECUTE FUNCTION billing.reject_change();
DROP TRIGGER finalization_decisions_no_truncate ON billing.finalization_decisions;
CREATE TRIGGER /* guard BL001.decisions-no-truncate */ finalization_decisions_no_truncate BEFORE TRUNCATE ON billing.finalization_decisions
  FOR EACH STATEMENT EXECUTE FUNCTION billing.reject_change();
DROP TRIGGER settlement_catch_up_receipts_no_truncate ON billing.settlement_catch_up_receipts;
CREATE TRIGGER /* guard BC001.receipts-no-truncate */ settlement_catch_up_receipts_no_truncate BEFORE TRUNCATE ON billing.settlement_catch_up_receipts
  FOR EACH STATEMENT EXECUTE FUNCTION billing.catch_up_reject_change();
DROP TRIGGER settlement_catch_up_works_no_truncate ON billing.settlement_catch_up_works;
CREATE TRIGGER /* guard BC001.works-no-truncate */ settlement_catch_up_works_no_truncate BEFORE TRUNCATE ON billing.settlement_catch_up_works
  FOR EACH STATEMENT EXECUTE FUNCTION billing.catch_up_reject_change();
DROP TRIGGER settlement_transitions_no_truncate ON billing.settlement_transitions;
CREATE TRIGGER /* guard BC001.transitions-no-truncate */ settlement_transitions_no_truncate BEFORE TRUNCATE ON billing.settlement_transitions
  FOR EACH STATEMENT EXECUTE FUNCTION billing.catch_up_reject_change();
DROP TRIGGER late_settlement_exposures_no_truncate ON billing.late_settlement_exposures;
CREATE TRIGGER /* guard BC001.exposures-no-truncate */ late_settlement_exposures_no_truncate BEFORE TRUNCATE ON billing.late_settlement_exposures
  FOR EACH STATEMENT EXECUTE FUNCTION billing.catch_up_reject_change();
DROP TRIGGER settlement_catch_up_fences_no_truncate ON billing.settlement_catch_up_fences;
CREATE TRIGGER /* guard BC001.fences-no-truncate */ settlement_catch_up_fences_no_truncate BEFORE TRUNCATE ON billing.settlement_catch_up_fences
  FOR EACH STATEMENT EXECUTE FUNCTION billing.catch_up_reject_change();
DROP TRIGGER settlement_catch_up_finishes_no_truncate ON billing.settlement_catch_up_finishes;
CREATE TRIGGER /* guard BC001.finishes-no-truncate */ settlement_catch_up_finishes_no_truncate BEFORE TRUNCATE ON billing.settlement_catch_up_finishes
  FOR EACH STATEMENT EXECUTE FUNCTION billing.catch_up_reject_change();
DROP TRIGGER settlement_catch_up_claims_no_truncate ON billing.settlement_catch_up_claims;
CREATE TRIGGER /* guard BC001.claims-no-truncate */ settlement_catch_up_claims_no_truncate BEFORE TRUNCATE ON billing.settlement_catch_up_claims
  FOR EACH STATEMENT EXECUTE FUNCTION billing.catch_up_reject_change();
DROP TRIGGER settlement_catch_up_attempts_no_truncate ON billing.settlement_catch_up_attempts;
CREATE TRIGGER /* guard BC001.attempts-no-truncate */ settlement_catch_up_attempts_no_truncate BEFORE TRUNCATE ON billing.settlement_catch_up_attempts
  FOR EACH STATEMENT EXECUTE FUNCTION billing.catch_up_reject_change();
DROP TRIGGER settlement_catch_up_blocks_no_truncate ON billing.settlement_catch_up_blocks;
CREATE TRIGGER /* guard BC001.blocks-no-truncate */ settlement_catch_up_blocks_no_truncate BEFORE TRUNCATE ON billing.settlement_catch_up_blocks
  FOR EACH STATEMENT EXECUTE FUNCTION billing.catch_up_reject_change();
-- +goose StatementEnd
