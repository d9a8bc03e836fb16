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

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION billing.check_finalized_reservation() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $fn$
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
-- +goose StatementEnd
