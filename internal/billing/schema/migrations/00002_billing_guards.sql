-- The state graphs of billing, refused by PostgreSQL itself (BL002, BL003,
-- BL005; see 00001): the fence's transitions and revision, the Work's
-- states, the reservation's absorbing terminal states and the monotonic
-- settlement-input watermark.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION billing.guard_fence() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  new_generation boolean;
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'billing: DELETE on a finalization fence is forbidden' USING ERRCODE = 'BL001';
  END IF;
  IF TG_OP = 'INSERT' THEN
    IF NEW.finalization_fence_revision <> 1 OR NEW.coordination_state <> 'pending_evaluation'
       OR NEW.active_work_generation IS DISTINCT FROM 1 OR NEW.latest_work_generation <> 1
       OR NEW.closure_watermark_state <> 'none' OR NEW.settlement_input_watermark_state <> 'none'
       OR NEW.committed_ref IS NOT NULL THEN
      RAISE EXCEPTION 'billing: a fence starts at revision 1, pending_evaluation with generation 1 and no watermark'
        USING ERRCODE = 'BL002';
    END IF;
    RETURN NEW;
  END IF;
  IF NEW.billing_finalization_fence_id <> OLD.billing_finalization_fence_id OR NEW.billing_reservation_id <> OLD.billing_reservation_id
     OR NEW.run_id <> OLD.run_id OR NEW.created_at <> OLD.created_at THEN
    RAISE EXCEPTION 'billing: a fence''s identity never changes' USING ERRCODE = 'BL002';
  END IF;
  IF OLD.coordination_state = 'committed' THEN
    RAISE EXCEPTION 'billing: fence % is committed (absorbing)', OLD.billing_finalization_fence_id USING ERRCODE = 'BL002';
  END IF;
  IF NEW.finalization_fence_revision <> OLD.finalization_fence_revision + 1 THEN
    RAISE EXCEPTION 'billing: fence revision % → % (must be +1)', OLD.finalization_fence_revision, NEW.finalization_fence_revision
      USING ERRCODE = 'BL002';
  END IF;
  IF NEW.coordination_state = 'reconciliation_required' THEN
    RAISE EXCEPTION 'billing: reconciliation_required needs the resolution command chain, which is not built'
      USING ERRCODE = 'BL003';
  END IF;
  IF NEW.latest_work_generation NOT IN (OLD.latest_work_generation, OLD.latest_work_generation + 1) THEN
    RAISE EXCEPTION 'billing: work generation % → %', OLD.latest_work_generation, NEW.latest_work_generation USING ERRCODE = 'BL002';
  END IF;
  new_generation := NEW.latest_work_generation = OLD.latest_work_generation + 1;
  IF NOT (CASE
       WHEN NEW.coordination_state = 'pending_evaluation' THEN new_generation
       WHEN NEW.coordination_state = 'awaiting_finalization' THEN OLD.coordination_state = 'pending_evaluation' AND NOT new_generation
       WHEN NEW.coordination_state = 'committed' THEN OLD.coordination_state = 'pending_evaluation' AND NOT new_generation
       ELSE false END) THEN
    RAISE EXCEPTION 'billing: fence transition % → % (new generation: %) is not in the graph',
      OLD.coordination_state, NEW.coordination_state, new_generation USING ERRCODE = 'BL002';
  END IF;
  IF (OLD.closure_watermark_state = 'applied' AND NEW.closure_watermark_state <> 'applied')
     OR (OLD.settlement_input_watermark_state = 'advanced' AND NEW.settlement_input_watermark_state <> 'advanced')
     OR ((NEW.closure_watermark_state <> OLD.closure_watermark_state
          OR NEW.settlement_input_watermark_state <> OLD.settlement_input_watermark_state) AND NOT new_generation) THEN
    RAISE EXCEPTION 'billing: a watermark moved backwards or without a new generation' USING ERRCODE = 'BL002';
  END IF;
  IF NEW.closure_watermark_state = 'applied' AND OLD.closure_watermark_state = 'none'
     AND NOT EXISTS (SELECT 1 FROM billing.closure_watermarks WHERE billing_finalization_fence_id = NEW.billing_finalization_fence_id) THEN
    RAISE EXCEPTION 'billing: closure watermark applied without its closure row' USING ERRCODE = 'BL002';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER fences_guard BEFORE INSERT OR UPDATE OR DELETE ON billing.billing_finalization_fences
  FOR EACH ROW EXECUTE FUNCTION billing.guard_fence();

CREATE FUNCTION billing.guard_work() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF /* guard BL001.work-no-delete */ TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'billing: DELETE on a finalization Work is forbidden' USING ERRCODE = 'BL001';
  END IF;
  IF TG_OP = 'INSERT' THEN
    IF /* guard BL002.work-start */ NOT ((NEW.work_generation = 1 AND NEW.work_state = 'waiting') OR (NEW.work_generation > 1 AND NEW.work_state = 'pending'))
       OR NEW.finished_at IS NOT NULL THEN
      RAISE EXCEPTION 'billing: Work generation % cannot start as %', NEW.work_generation, NEW.work_state USING ERRCODE = 'BL002';
    END IF;
    RETURN NEW;
  END IF;
  IF /* guard BL001.work-content */ (NEW.billing_finalization_fence_id, NEW.work_generation, NEW.work_ref, NEW.work_schema_version, NEW.work_digest_algorithm_version,
      NEW.work_digest, NEW.billing_finalization_operation_id, NEW.trigger_snapshot_ref, NEW.work_body, NEW.created_at)
     IS DISTINCT FROM
     (OLD.billing_finalization_fence_id, OLD.work_generation, OLD.work_ref, OLD.work_schema_version, OLD.work_digest_algorithm_version,
      OLD.work_digest, OLD.billing_finalization_operation_id, OLD.trigger_snapshot_ref, OLD.work_body, OLD.created_at) THEN
    RAISE EXCEPTION 'billing: a Work''s content never changes' USING ERRCODE = 'BL001';
  END IF;
  IF /* guard BL002.work-graph */ NOT ((OLD.work_state = 'waiting' AND NEW.work_state IN ('evaluated', 'superseded'))
          OR (OLD.work_state = 'pending' AND NEW.work_state IN ('evaluated', 'committed', 'superseded'))) THEN
    RAISE EXCEPTION 'billing: Work state % → % is not in the graph', OLD.work_state, NEW.work_state USING ERRCODE = 'BL002';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER works_guard BEFORE INSERT OR UPDATE OR DELETE ON billing.billing_finalization_works
  FOR EACH ROW EXECUTE FUNCTION billing.guard_work();

CREATE FUNCTION billing.guard_reservation() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF /* guard BL001.reservation-no-delete */ TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'billing: DELETE on a reservation state is forbidden' USING ERRCODE = 'BL001';
  END IF;
  IF TG_OP = 'INSERT' THEN
    IF /* guard BL002.reservation-start */ NEW.state <> 'reserved' THEN
      RAISE EXCEPTION 'billing: a reservation starts reserved' USING ERRCODE = 'BL002';
    END IF;
    RETURN NEW;
  END IF;
  IF /* guard BL002.reservation-identity */ (NEW.billing_reservation_id, NEW.billing_account_id, NEW.run_id, NEW.economic_identity, NEW.reserved_amount, NEW.created_at)
     IS DISTINCT FROM (OLD.billing_reservation_id, OLD.billing_account_id, OLD.run_id, OLD.economic_identity, OLD.reserved_amount, OLD.created_at) THEN
    RAISE EXCEPTION 'billing: a reservation''s identity and reserved amount never change' USING ERRCODE = 'BL002';
  END IF;
  IF /* guard BL002.reservation-absorbing */ OLD.state <> 'reserved' THEN
    RAISE EXCEPTION 'billing: reservation % is % (absorbing)', OLD.billing_reservation_id, OLD.state USING ERRCODE = 'BL002';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER reservation_states_guard BEFORE INSERT OR UPDATE OR DELETE ON billing.reservation_states
  FOR EACH ROW EXECUTE FUNCTION billing.guard_reservation();

-- At commit, a finalized reservation's ledger settles + releases exactly
-- what was reserved: its hold is empty, revenue holds the settled amount,
-- the wallet keeps exactly the settled amount drawn, and the committed fact
-- is the one the reservation names.
CREATE FUNCTION billing.check_finalized_reservation() RETURNS trigger
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
  IF hold <> 0 OR revenue <> NEW.settled_amount OR wallet <> NEW.settled_amount
     OR NOT EXISTS (SELECT 1 FROM billing.ledger_posting_groups
                     WHERE billing_reservation_id = NEW.billing_reservation_id AND group_kind = 'finalization')
     OR NOT EXISTS (SELECT 1 FROM billing.finalization_committed
                     WHERE committed_ref = NEW.committed_ref AND billing_reservation_id = NEW.billing_reservation_id
                       AND settled_amount = NEW.settled_amount AND released_amount = NEW.released_amount) THEN
    RAISE EXCEPTION 'billing: reservation % is % but its ledger holds %, settled % (wallet %), want settled % + released % = reserved %',
      NEW.billing_reservation_id, NEW.state, hold, revenue, wallet, NEW.settled_amount, NEW.released_amount, NEW.reserved_amount
      USING ERRCODE = 'BL005';
  END IF;
  RETURN NULL;
END
$fn$;
CREATE CONSTRAINT TRIGGER reservation_states_ledger AFTER UPDATE ON billing.reservation_states
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION billing.check_finalized_reservation();

CREATE FUNCTION billing.guard_settlement_watermark() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF /* guard BL001.watermark-no-delete */ TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'billing: DELETE on a settlement-input watermark is forbidden' USING ERRCODE = 'BL001';
  END IF;
  IF TG_OP = 'INSERT' THEN
    IF /* guard BL002.watermark-start */ NEW.inbox_revision <> 1 THEN
      RAISE EXCEPTION 'billing: a watermark starts at inbox revision 1' USING ERRCODE = 'BL002';
    END IF;
    RETURN NEW;
  END IF;
  IF /* guard BL002.watermark-dimension */ (NEW.billing_reservation_id, NEW.settlement_dimension_id, NEW.run_id, NEW.run_step_id, NEW.execution_attempt_id,
      NEW.charge_dimension_key, NEW.settlement_economic_identity)
     IS DISTINCT FROM (OLD.billing_reservation_id, OLD.settlement_dimension_id, OLD.run_id, OLD.run_step_id, OLD.execution_attempt_id,
      OLD.charge_dimension_key, OLD.settlement_economic_identity) THEN
    RAISE EXCEPTION 'billing: a watermark''s dimension never changes' USING ERRCODE = 'BL002';
  END IF;
  IF /* guard BL002.watermark-monotonic */ NEW.settlement_input_state_version <= OLD.settlement_input_state_version OR NEW.inbox_revision <> OLD.inbox_revision + 1 THEN
    RAISE EXCEPTION 'billing: settlement-input watermark % → % (monotonic)', OLD.settlement_input_state_version,
      NEW.settlement_input_state_version USING ERRCODE = 'BL002';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER settlement_input_watermarks_guard BEFORE INSERT OR UPDATE OR DELETE ON billing.settlement_input_watermarks
  FOR EACH ROW EXECUTE FUNCTION billing.guard_settlement_watermark();
-- +goose StatementEnd
