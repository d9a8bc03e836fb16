-- Billing (schema billing, database core), ADR-031 Billing finalization
-- (BI-1, BFC-*). The finalization fence, its trigger snapshots and Work move
-- here from admission (the admission transaction still creates them, through
-- billing.OpenFinalizationTx); this file adds every state the fence takes,
-- the reservation's terminal states, the append-only double-entry ledger,
-- the closure and settlement-input watermarks, finalization evaluations,
-- the committed fact and the coordinator's receipts. docs/billing.md
-- explains every table and rule.
--
-- Custom SQLSTATEs (internal/billing/errors.go names them):
--   BL001 update/delete of an insert-only billing fact
--   BL002 a transition the state graph refuses (fence, work, reservation,
--         watermark)
--   BL003 entering reconciliation_required while the resolution command
--         chain is absent
--   BL004 an unbalanced posting group or a line off its reservation's
--         economic identity
--   BL005 a finalized reservation whose ledger does not settle + release
--         exactly what was reserved

-- +goose Up
-- +goose StatementBegin
CREATE SCHEMA billing;

COMMENT ON SCHEMA billing IS
  'OceanWay Billing: finalization fences, their trigger snapshots and Work, reservation states, the ledger, evaluations, committed facts, coordinator receipts.';

CREATE FUNCTION billing.reject_change() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  RAISE EXCEPTION 'billing: % on %.% is forbidden (insert-only fact)', TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME
    USING ERRCODE = 'BL001';
END
$fn$;

-- 1. The fence, its trigger snapshots and Work move out of admission.
ALTER TABLE admission.billing_finalization_fences SET SCHEMA billing;
ALTER TABLE admission.billing_finalization_trigger_snapshots SET SCHEMA billing;
ALTER TABLE admission.billing_finalization_works SET SCHEMA billing;
DROP TRIGGER trigger_snapshots_immutable ON billing.billing_finalization_trigger_snapshots;
DROP TRIGGER works_immutable_identity ON billing.billing_finalization_works;
CREATE TRIGGER /* guard BL001.trigger-snapshots-immutable */ trigger_snapshots_immutable BEFORE UPDATE OR DELETE ON billing.billing_finalization_trigger_snapshots
  FOR EACH ROW EXECUTE FUNCTION billing.reject_change();

-- Fence states (ADR-031; outbox document, coordinator paragraphs):
--   pending_evaluation       bound to the latest generation's one Work
--   awaiting_finalization    a waiting state: no Work (an evaluation said
--                            blocked, or would need reconciliation), a
--                            visible waiting_reason
--   reconciliation_required  in the graph, refused (BL003) until the
--                            resolution command chain exists
--   committed                the absorbing success
ALTER TABLE billing.billing_finalization_fences
  DROP CONSTRAINT billing_finalization_fences_coordination_state_check,
  DROP CONSTRAINT billing_finalization_fences_closure_watermark_state_check,
  DROP CONSTRAINT billing_finalization_fences_settlement_input_watermark_st_check,
  ALTER COLUMN active_work_generation DROP NOT NULL,
  ADD COLUMN waiting_reason text,
  ADD COLUMN committed_ref text,
  ADD COLUMN updated_at timestamptz,
  ADD CONSTRAINT fence_state CHECK (coordination_state IN
    ('pending_evaluation', 'awaiting_finalization', 'reconciliation_required', 'committed')),
  ADD CONSTRAINT fence_active_work CHECK ((coordination_state = 'pending_evaluation') = (active_work_generation IS NOT NULL)
    AND (active_work_generation IS NULL OR active_work_generation = latest_work_generation)),
  ADD CONSTRAINT fence_waiting_reason CHECK ((coordination_state = 'awaiting_finalization') = (waiting_reason IS NOT NULL)),
  ADD CONSTRAINT fence_committed CHECK ((coordination_state = 'committed') = (committed_ref IS NOT NULL)),
  ADD CONSTRAINT fence_closure_watermark CHECK (closure_watermark_state IN ('none', 'applied')),
  ADD CONSTRAINT fence_settlement_watermark CHECK (settlement_input_watermark_state IN ('none', 'advanced'));

-- Work states (repository state; the Work's content never changes):
--   waiting     the admission generation: closure_event_not_applied
--   pending     runnable
--   evaluated   finished with a recorded evaluation (blocked, or
--               reconciliation deferred), no economic effect
--   committed   finished with the committed fact
--   superseded  a newer generation took over
ALTER TABLE billing.billing_finalization_works
  DROP CONSTRAINT billing_finalization_works_work_state_check,
  DROP CONSTRAINT billing_finalization_works_waiting_reason_check,
  ALTER COLUMN waiting_reason DROP NOT NULL,
  ADD COLUMN finished_at timestamptz,
  ADD CONSTRAINT work_state CHECK (work_state IN ('waiting', 'pending', 'evaluated', 'committed', 'superseded')),
  ADD CONSTRAINT work_waiting_reason CHECK ((work_state = 'waiting') = (waiting_reason IS NOT NULL)
    AND (waiting_reason IS NULL OR waiting_reason = 'closure_event_not_applied')),
  ADD CONSTRAINT work_finished CHECK ((work_state IN ('evaluated', 'committed', 'superseded')) = (finished_at IS NOT NULL));

-- 2. The closure watermark: the one execution.run-finalization.closed@1 the
-- coordinator applied, with its receipt (insert-only; one per fence and per
-- run — a second closure event is refused).
CREATE TABLE billing.closure_watermarks (
  billing_finalization_fence_id                  uuid        NOT NULL PRIMARY KEY REFERENCES billing.billing_finalization_fences,
  run_id                                         uuid        NOT NULL UNIQUE,
  closure_event_id                               uuid        NOT NULL UNIQUE,
  closure_event_envelope_digest_algorithm_version text       NOT NULL CHECK (closure_event_envelope_digest_algorithm_version = 'jcs-sha256-v1'),
  closure_event_envelope_sha256                  text        NOT NULL CHECK (closure_event_envelope_sha256 ~ '^[0-9a-f]{64}$'),
  closure_operation_id                           uuid        NOT NULL,
  run_execution_finalization_ref                 text        NOT NULL,
  run_execution_finalization_schema_version      text        NOT NULL,
  run_execution_finalization_digest_algorithm_version text   NOT NULL,
  run_execution_finalization_digest              text        NOT NULL,
  run_execution_finalization_state_version       bigint      NOT NULL CHECK (run_execution_finalization_state_version >= 1),
  attempt_set_manifest_ref                       text        NOT NULL,
  attempt_set_manifest_schema_version            text        NOT NULL,
  attempt_set_manifest_digest_algorithm_version  text        NOT NULL,
  attempt_set_manifest_digest                    text        NOT NULL,
  attempt_count                                  bigint      NOT NULL CHECK (attempt_count >= 0),
  coordinator_receipt_ref                        text        NOT NULL UNIQUE,
  coordinator_receipt_schema_version             text        NOT NULL,
  coordinator_receipt_digest_algorithm_version   text        NOT NULL,
  coordinator_receipt_digest                     text        NOT NULL,
  work_generation                                bigint      NOT NULL CHECK (work_generation >= 2),
  applied_at                                     timestamptz NOT NULL
);
CREATE TRIGGER /* guard BL001.closure-watermarks-immutable */ closure_watermarks_immutable BEFORE UPDATE OR DELETE ON billing.closure_watermarks
  FOR EACH ROW EXECUTE FUNCTION billing.reject_change();

-- 3. The per-dimension settlement-input watermark (SettlementInputWakeupWatermark):
-- the highest Current SettlementInputSnapshot@1 state version observed for
-- a settlement dimension, monotonic (BL002 when it would go backwards).
CREATE TABLE billing.settlement_input_watermarks (
  billing_reservation_id                    uuid        NOT NULL,
  settlement_dimension_id                   uuid        NOT NULL,
  run_id                                    uuid        NOT NULL,
  run_step_id                               uuid        NOT NULL,
  execution_attempt_id                      uuid        NOT NULL,
  charge_dimension_key                      text        NOT NULL,
  settlement_economic_identity              text        NOT NULL,
  settlement_input_snapshot_ref             text        NOT NULL,
  settlement_input_snapshot_schema_version  text        NOT NULL,
  settlement_input_snapshot_digest_algorithm_version text NOT NULL,
  settlement_input_snapshot_digest          text        NOT NULL,
  settlement_input_state_version            bigint      NOT NULL CHECK (settlement_input_state_version >= 1),
  last_event_id                             uuid        NOT NULL,
  inbox_revision                            bigint      NOT NULL CHECK (inbox_revision >= 1),
  updated_at                                timestamptz NOT NULL,
  PRIMARY KEY (billing_reservation_id, settlement_dimension_id)
);

-- 4. Reservation states: reserved → settled | released, both absorbing.
CREATE TABLE billing.reservation_states (
  billing_reservation_id uuid        NOT NULL PRIMARY KEY REFERENCES admission.reservations,
  billing_account_id     uuid        NOT NULL,
  run_id                 uuid        NOT NULL UNIQUE,
  economic_identity      text        NOT NULL,
  reserved_amount        numeric     NOT NULL CHECK (reserved_amount > 0),
  state                  text        NOT NULL CHECK (state IN ('reserved', 'settled', 'released')),
  settled_amount         numeric     CHECK (settled_amount >= 0),
  released_amount        numeric     CHECK (released_amount >= 0),
  committed_ref          text,
  created_at             timestamptz NOT NULL,
  finalized_at           timestamptz,
  CONSTRAINT reservation_terminal CHECK ((state = 'reserved') = (settled_amount IS NULL)
    AND (state = 'reserved') = (released_amount IS NULL)
    AND (state = 'reserved') = (committed_ref IS NULL)
    AND (state = 'reserved') = (finalized_at IS NULL)),
  CONSTRAINT reservation_adds_up CHECK (state = 'reserved' OR settled_amount + released_amount = reserved_amount),
  CONSTRAINT reservation_outcome CHECK (state <> 'released' OR settled_amount = 0),
  CONSTRAINT reservation_settles CHECK (state <> 'settled' OR settled_amount > 0)
);

-- 5. The ledger: posting groups of balanced lines, every line tagged with
-- its reservation's economic identity, amounts numeric (never float).
CREATE TABLE billing.ledger_posting_groups (
  posting_group_id       uuid        NOT NULL PRIMARY KEY,
  billing_reservation_id uuid        NOT NULL REFERENCES billing.reservation_states,
  group_kind             text        NOT NULL CHECK (group_kind IN ('reservation_hold', 'finalization')),
  economic_identity      text        NOT NULL,
  created_at             timestamptz NOT NULL
);
-- One hold and one finalization per reservation (success is absorbing).
CREATE UNIQUE INDEX ledger_posting_groups_once ON billing.ledger_posting_groups (billing_reservation_id, group_kind)
  WHERE group_kind IN ('reservation_hold', 'finalization');

CREATE TABLE billing.ledger_postings (
  posting_group_id       uuid        NOT NULL REFERENCES billing.ledger_posting_groups,
  line_no                integer     NOT NULL CHECK (line_no BETWEEN 1 AND 16),
  billing_reservation_id uuid        NOT NULL,
  billing_account_id     uuid        NOT NULL,
  economic_identity      text        NOT NULL,
  account_kind           text        NOT NULL CHECK (account_kind IN ('reservation_hold', 'customer_wallet', 'settled_revenue')),
  direction              text        NOT NULL CHECK (direction IN ('debit', 'credit')),
  amount                 numeric     NOT NULL CHECK (amount > 0),
  posted_at              timestamptz NOT NULL,
  PRIMARY KEY (posting_group_id, line_no)
);
CREATE INDEX ledger_postings_reservation ON billing.ledger_postings (billing_reservation_id);

-- Balances per (reservation, account), maintained only by the posting
-- trigger; the CHECK is the "no negative balance" guard. Credit-normal
-- accounts (reservation_hold, settled_revenue) add credits, the
-- debit-normal customer_wallet adds debits.
CREATE TABLE billing.ledger_balances (
  billing_reservation_id uuid    NOT NULL,
  account_kind           text    NOT NULL,
  balance                numeric NOT NULL CONSTRAINT ledger_no_negative_balance CHECK (balance >= 0),
  PRIMARY KEY (billing_reservation_id, account_kind)
);

CREATE FUNCTION billing.post_balance() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $fn$
DECLARE
  signed numeric := CASE
    WHEN (NEW.account_kind = 'customer_wallet') = (NEW.direction = 'debit') THEN NEW.amount
    ELSE -NEW.amount END;
BEGIN
  -- UPDATE first: an INSERT ... ON CONFLICT would check the negative
  -- delta itself against the CHECK. Postings of one reservation are written
  -- under its fence lock, so the two statements do not race.
  UPDATE billing.ledger_balances SET balance = balance + signed
   WHERE billing_reservation_id = NEW.billing_reservation_id AND account_kind = NEW.account_kind;
  IF NOT FOUND THEN
    INSERT INTO billing.ledger_balances (billing_reservation_id, account_kind, balance)
    VALUES (NEW.billing_reservation_id, NEW.account_kind, signed);
  END IF;
  RETURN NULL;
END
$fn$;

-- At commit: every group a transaction touched is balanced (debits =
-- credits, at least two lines) and every line carries its group's
-- reservation and economic identity.
CREATE FUNCTION billing.check_posting_group() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $fn$
DECLARE
  g billing.ledger_posting_groups;
  debits numeric;
  credits numeric;
  lines bigint;
  off_identity bigint;
BEGIN
  SELECT * INTO g FROM billing.ledger_posting_groups WHERE posting_group_id = NEW.posting_group_id;
  SELECT COALESCE(sum(amount) FILTER (WHERE direction = 'debit'), 0), COALESCE(sum(amount) FILTER (WHERE direction = 'credit'), 0),
         count(*), count(*) FILTER (WHERE billing_reservation_id <> g.billing_reservation_id OR economic_identity <> g.economic_identity)
    INTO debits, credits, lines, off_identity
    FROM billing.ledger_postings WHERE posting_group_id = NEW.posting_group_id;
  IF debits <> credits OR lines < 2 THEN
    RAISE EXCEPTION 'billing: posting group % is not balanced (debits %, credits %, % lines)', NEW.posting_group_id, debits, credits, lines
      USING ERRCODE = 'BL004';
  END IF;
  IF off_identity > 0 OR g.economic_identity <> (SELECT economic_identity FROM billing.reservation_states
                                                  WHERE billing_reservation_id = g.billing_reservation_id) THEN
    RAISE EXCEPTION 'billing: posting group % has lines off its reservation''s economic identity', NEW.posting_group_id
      USING ERRCODE = 'BL004';
  END IF;
  RETURN NULL;
END
$fn$;

CREATE TRIGGER ledger_postings_balance AFTER INSERT ON billing.ledger_postings
  FOR EACH ROW EXECUTE FUNCTION billing.post_balance();
CREATE CONSTRAINT TRIGGER ledger_postings_balanced AFTER INSERT ON billing.ledger_postings
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION billing.check_posting_group();
CREATE TRIGGER /* guard BL001.posting-groups-immutable */ ledger_posting_groups_immutable BEFORE UPDATE OR DELETE ON billing.ledger_posting_groups
  FOR EACH ROW EXECUTE FUNCTION billing.reject_change();
CREATE TRIGGER /* guard BL001.postings-immutable */ ledger_postings_immutable BEFORE UPDATE OR DELETE ON billing.ledger_postings
  FOR EACH ROW EXECUTE FUNCTION billing.reject_change();
CREATE TRIGGER ledger_balances_no_delete BEFORE DELETE ON billing.ledger_balances
  FOR EACH ROW EXECUTE FUNCTION billing.reject_change();

-- Reservations admitted before this line existed get their state and
-- balanced hold posting (the admission transaction writes both from now on).
INSERT INTO billing.reservation_states (billing_reservation_id, billing_account_id, run_id, economic_identity,
    reserved_amount, state, created_at)
SELECT billing_reservation_id, billing_account_id, run_id, '{"kind":"credits"}', reserved_credits, 'reserved', created_at
  FROM admission.reservations;
CREATE TEMPORARY TABLE hold_backfill ON COMMIT DROP AS
SELECT gen_random_uuid() AS posting_group_id, billing_reservation_id, billing_account_id, reserved_amount, created_at
  FROM billing.reservation_states;
INSERT INTO billing.ledger_posting_groups (posting_group_id, billing_reservation_id, group_kind, economic_identity, created_at)
SELECT posting_group_id, billing_reservation_id, 'reservation_hold', '{"kind":"credits"}', created_at FROM hold_backfill;
INSERT INTO billing.ledger_postings (posting_group_id, line_no, billing_reservation_id, billing_account_id, economic_identity,
    account_kind, direction, amount, posted_at)
SELECT posting_group_id, line.no, billing_reservation_id, billing_account_id, '{"kind":"credits"}', line.account, line.direction,
       reserved_amount, created_at
  FROM hold_backfill,
       (VALUES (1, 'reservation_hold', 'credit'), (2, 'customer_wallet', 'debit')) AS line (no, account, direction);

-- 6. Finalization evaluations that end a Work generation without economic
-- effect: blocked (a normal, visible wait) or reconciliation_deferred
-- (would require reconciliation; recorded until the command chain exists).
CREATE TABLE billing.finalization_evaluations (
  billing_finalization_fence_id     uuid        NOT NULL,
  work_generation                   bigint      NOT NULL,
  billing_finalization_operation_id uuid        NOT NULL UNIQUE,
  outcome                           text        NOT NULL CHECK (outcome IN ('blocked', 'reconciliation_deferred')),
  reason_code                       text        NOT NULL CHECK (reason_code ~ '^[a-z][a-z0-9_]{0,63}$'),
  reason_detail                     text        NOT NULL CHECK (length(reason_detail) <= 1000),
  decision_ref                      text,
  decision_schema_version           text,
  decision_digest_algorithm_version text,
  decision_digest                   text,
  recorded_at                       timestamptz NOT NULL,
  PRIMARY KEY (billing_finalization_fence_id, work_generation),
  FOREIGN KEY (billing_finalization_fence_id, work_generation) REFERENCES billing.billing_finalization_works,
  CHECK (num_nulls(decision_ref, decision_schema_version, decision_digest_algorithm_version, decision_digest) IN (0, 4))
);
CREATE TRIGGER /* guard BL001.evaluations-immutable */ finalization_evaluations_immutable BEFORE UPDATE OR DELETE ON billing.finalization_evaluations
  FOR EACH ROW EXECUTE FUNCTION billing.reject_change();

-- 7. BillingFinalizationCommitted@1: one per reservation, per fence and per
-- operation; stored as its canonical body.
CREATE TABLE billing.finalization_committed (
  committed_ref                        text        NOT NULL PRIMARY KEY,
  committed_schema_version             text        NOT NULL CHECK (committed_schema_version = '1'),
  committed_digest_algorithm_version   text        NOT NULL CHECK (committed_digest_algorithm_version = 'jcs-sha256-v1'),
  committed_digest                     text        NOT NULL CHECK (committed_digest ~ '^[0-9a-f]{64}$'),
  billing_reservation_id               uuid        NOT NULL UNIQUE REFERENCES billing.reservation_states,
  billing_finalization_fence_id        uuid        NOT NULL UNIQUE,
  work_generation                      bigint      NOT NULL,
  billing_finalization_operation_id    uuid        NOT NULL UNIQUE,
  finalization_fence_revision          bigint      NOT NULL,
  decision                             text        NOT NULL CHECK (decision IN ('settle_and_release_remainder', 'release_all')),
  reserved_amount                      numeric     NOT NULL,
  settled_amount                       numeric     NOT NULL,
  released_amount                      numeric     NOT NULL,
  posting_group_id                     uuid        NOT NULL UNIQUE REFERENCES billing.ledger_posting_groups,
  event_id                             uuid        NOT NULL UNIQUE,
  event_envelope_sha256                text        NOT NULL CHECK (event_envelope_sha256 ~ '^[0-9a-f]{64}$'),
  committed_body                       text        NOT NULL,
  committed_at                         timestamptz NOT NULL,
  FOREIGN KEY (billing_finalization_fence_id, work_generation) REFERENCES billing.billing_finalization_works,
  CHECK (settled_amount + released_amount = reserved_amount)
);
CREATE TRIGGER /* guard BL001.committed-immutable */ finalization_committed_immutable BEFORE UPDATE OR DELETE ON billing.finalization_committed
  FOR EACH ROW EXECUTE FUNCTION billing.reject_change();

-- 8. BillingFinalizationCoordinatorConsumerReceipt@1: the inbox's standard
-- receipt table, insert-only.
CREATE TABLE billing.coordinator_receipts (
  consumer_name                           text        NOT NULL CHECK (consumer_name = 'billing_finalization_coordinator_consumer'),
  event_id                                uuid        NOT NULL,
  event_type                              text        NOT NULL CHECK (event_type IN
    ('execution.run-finalization.closed@1', 'billing.finalization-reconciliation-resolution.applied@1')),
  event_schema_version                    text        NOT NULL CHECK (event_schema_version = '1'),
  event_envelope_digest_algorithm_version text        NOT NULL CHECK (event_envelope_digest_algorithm_version = 'jcs-sha256-v1'),
  event_envelope_sha256                   text        NOT NULL CHECK (event_envelope_sha256 ~ '^[0-9a-f]{64}$'),
  receipt_ref                             text        NOT NULL UNIQUE,
  receipt_schema_version                  text        NOT NULL CHECK (receipt_schema_version = '1'),
  receipt_digest_algorithm_version        text        NOT NULL CHECK (receipt_digest_algorithm_version = 'jcs-sha256-v1'),
  receipt_digest                          text        NOT NULL CHECK (receipt_digest ~ '^[0-9a-f]{64}$'),
  receipt_body                            text        NOT NULL,
  recorded_at                             timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer_name, event_id)
);
CREATE TRIGGER /* guard BL001.coordinator-receipts-immutable */ coordinator_receipts_immutable BEFORE UPDATE OR DELETE ON billing.coordinator_receipts
  FOR EACH ROW EXECUTE FUNCTION billing.reject_change();
-- +goose StatementEnd
