-- Catch-up Work attempts, fencing tokens and the blocked path (issue 16;
-- outbox-publisher "Watermark、Fence、Basis、内容寻址Work、Started/Finished与
-- Operation Read均使用严格Contract和Fencing Token" and the catch-up worker's
-- owner conflict: SettlementInputConflictFact@1 +
-- BillingSettlementCatchUpWorkAttemptBlocked@1, Fence=blocked_on_owner_conflict,
-- the same activeWork stays pending, no Finished). docs/billing-catch-up.md.
--
--   settlement_catch_up_claims    one row per fence: the active generation,
--                                 its last attempt number and when it may be
--                                 claimed (lease end, or blocked backoff;
--                                 'infinity' once caught up). The worker's
--                                 claim reads the partial index of claimable
--                                 rows only, never caught-up history.
--   settlement_catch_up_attempts  the Started log: one row per attempt of a
--                                 Work generation, dense attempt numbers, a
--                                 fresh fencing token and its lease. The claim
--                                 starts a new attempt only after the previous
--                                 lease ended or its worker released it (a
--                                 step that wrote nothing, a blocked backoff);
--                                 safety does not rest on the lease: whatever
--                                 the clocks, only the latest token writes.
--   settlement_catch_up_blocks    BillingSettlementCatchUpWorkAttemptBlocked@1,
--                                 one per attempt, with the owner's conflict
--                                 fact quadruple.
--
-- Every worker write is bound to the latest attempt IN THE DATABASE: a
-- finish, a block and a worker fence update must carry the fencing token of
-- the latest attempt of the generation they act on; an old token (a lease
-- that expired and was reclaimed) writes nothing (BC006). A token-less fence
-- update is the consumer's reopen: it can only schedule the next generation
-- as pending_verification and change nothing that was settled or evaluated.
--
-- Custom SQLSTATEs (class BC):
--   BC006 a worker write with a fencing token that is not the latest attempt
--         of its generation (or none), or a token-less update that is not a reopen
--   BC007 an attempt outside its graph (not dense, generation not the
--         fence's active one, fence not claimable)

-- +goose Up
-- +goose StatementBegin
CREATE TABLE billing.settlement_catch_up_claims (
  settlement_dimension_id uuid        PRIMARY KEY REFERENCES billing.settlement_catch_up_fences (settlement_dimension_id),
  work_generation         bigint      NOT NULL CHECK (work_generation >= 1),
  attempt_number          bigint      NOT NULL DEFAULT 0 CHECK (attempt_number >= 0),
  available_at            timestamptz NOT NULL
);
-- Claimable rows only: a caught-up fence's row is 'infinity' and not indexed.
CREATE INDEX settlement_catch_up_claims_available ON billing.settlement_catch_up_claims (available_at, settlement_dimension_id)
  WHERE available_at < 'infinity';

CREATE TABLE billing.settlement_catch_up_attempts (
  settlement_dimension_id uuid        NOT NULL,
  work_generation         bigint      NOT NULL,
  attempt_number          bigint      NOT NULL CHECK (attempt_number >= 1),
  fencing_token           uuid        NOT NULL UNIQUE,
  started_at              timestamptz NOT NULL,
  lease_expires_at        timestamptz NOT NULL CHECK (lease_expires_at > started_at),
  PRIMARY KEY (settlement_dimension_id, work_generation, attempt_number),
  UNIQUE (settlement_dimension_id, work_generation, attempt_number, fencing_token),
  FOREIGN KEY (settlement_dimension_id, work_generation)
    REFERENCES billing.settlement_catch_up_works (settlement_dimension_id, work_generation)
);
CREATE TRIGGER /* guard BC001.attempts-insert-only */ settlement_catch_up_attempts_insert_only BEFORE UPDATE OR DELETE ON billing.settlement_catch_up_attempts
  FOR EACH ROW EXECUTE FUNCTION billing.catch_up_reject_change();

CREATE FUNCTION billing.catch_up_attempt_start() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  prev billing.settlement_catch_up_attempts;
  f    billing.settlement_catch_up_fences;
BEGIN
  SELECT * INTO f FROM billing.settlement_catch_up_fences WHERE settlement_dimension_id = NEW.settlement_dimension_id;
  IF /* guard BC007.attempt-not-active */ NOT FOUND OR f.active_work_generation <> NEW.work_generation
     OR f.coordination_state NOT IN ('pending_verification', 'blocked_on_owner_conflict') THEN
    RAISE EXCEPTION 'billing: catch-up attempt of %/% is not of the fence''s active, claimable generation',
      NEW.settlement_dimension_id, NEW.work_generation USING ERRCODE = 'BC007';
  END IF;
  SELECT * INTO prev FROM billing.settlement_catch_up_attempts
  WHERE settlement_dimension_id = NEW.settlement_dimension_id AND work_generation = NEW.work_generation
  ORDER BY attempt_number DESC LIMIT 1;
  IF /* guard BC007.attempt-not-next */ NEW.attempt_number <> COALESCE(prev.attempt_number, 0) + 1 THEN
    RAISE EXCEPTION 'billing: catch-up attempt %/%/% is not the next attempt of its generation',
      NEW.settlement_dimension_id, NEW.work_generation, NEW.attempt_number USING ERRCODE = 'BC007';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER settlement_catch_up_attempts_start BEFORE INSERT ON billing.settlement_catch_up_attempts
  FOR EACH ROW EXECUTE FUNCTION billing.catch_up_attempt_start();

-- The fencing check: (dimension, generation, token) is the generation's latest attempt.
CREATE FUNCTION billing.catch_up_require_latest_token(dim uuid, generation bigint, token uuid) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
  latest uuid;
BEGIN
  SELECT fencing_token INTO latest FROM billing.settlement_catch_up_attempts
  WHERE settlement_dimension_id = dim AND work_generation = generation
  ORDER BY attempt_number DESC LIMIT 1;
  IF token IS NULL OR latest IS DISTINCT FROM token THEN
    RAISE EXCEPTION 'billing: fencing token % is not the latest attempt of catch-up work %/%', token, dim, generation
      USING ERRCODE = 'BC006';
  END IF;
END
$fn$;

CREATE TABLE billing.settlement_catch_up_blocks (
  settlement_dimension_id                 uuid        NOT NULL,
  work_generation                         bigint      NOT NULL,
  attempt_number                          bigint      NOT NULL,
  fencing_token                           uuid        NOT NULL,
  blocked_ref                             text        NOT NULL UNIQUE,
  blocked_schema_version                  text        NOT NULL CHECK (blocked_schema_version = '1'),
  blocked_digest_algorithm_version        text        NOT NULL CHECK (blocked_digest_algorithm_version = 'jcs-sha256-v1'),
  blocked_digest                          text        NOT NULL CHECK (blocked_digest ~ '^[0-9a-f]{64}$'),
  conflict_fact_ref                       text        NOT NULL,
  conflict_fact_schema_version            text        NOT NULL,
  conflict_fact_digest_algorithm_version  text        NOT NULL,
  conflict_fact_digest                    text        NOT NULL,
  blocked_body                            text        NOT NULL,
  blocked_at                              timestamptz NOT NULL,
  PRIMARY KEY (settlement_dimension_id, work_generation, attempt_number),
  FOREIGN KEY (settlement_dimension_id, work_generation, attempt_number, fencing_token)
    REFERENCES billing.settlement_catch_up_attempts (settlement_dimension_id, work_generation, attempt_number, fencing_token)
);
CREATE TRIGGER /* guard BC001.blocks-insert-only */ settlement_catch_up_blocks_insert_only BEFORE UPDATE OR DELETE ON billing.settlement_catch_up_blocks
  FOR EACH ROW EXECUTE FUNCTION billing.catch_up_reject_change();

-- A finish and a block carry the latest attempt's token; a blocked Work is
-- never finished by the block (it has no finish row until it succeeds).
ALTER TABLE billing.settlement_catch_up_finishes
  ADD COLUMN attempt_number bigint,
  ADD COLUMN fencing_token  uuid,
  ADD FOREIGN KEY (settlement_dimension_id, work_generation, attempt_number, fencing_token)
    REFERENCES billing.settlement_catch_up_attempts (settlement_dimension_id, work_generation, attempt_number, fencing_token);

CREATE FUNCTION billing.catch_up_attempt_fenced() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM billing.catch_up_require_latest_token(NEW.settlement_dimension_id, NEW.work_generation, NEW.fencing_token);
  RETURN NEW;
END
$fn$;
CREATE TRIGGER settlement_catch_up_finishes_fenced BEFORE INSERT ON billing.settlement_catch_up_finishes
  FOR EACH ROW EXECUTE FUNCTION billing.catch_up_attempt_fenced();
CREATE TRIGGER settlement_catch_up_blocks_fenced BEFORE INSERT ON billing.settlement_catch_up_blocks
  FOR EACH ROW EXECUTE FUNCTION billing.catch_up_attempt_fenced();

-- The worker's fence update names its attempt's token (the generation it
-- finishes or blocks is OLD.active_work_generation).
ALTER TABLE billing.settlement_catch_up_fences ADD COLUMN attempt_fencing_token uuid;

CREATE FUNCTION billing.catch_up_fence_fenced() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF NEW.attempt_fencing_token IS NOT NULL THEN
    PERFORM billing.catch_up_require_latest_token(OLD.settlement_dimension_id, OLD.active_work_generation, NEW.attempt_fencing_token);
  ELSIF NEW.active_work_generation <> OLD.active_work_generation + 1 OR NEW.coordination_state <> 'pending_verification'
     OR (NEW.settlement_state_revision, NEW.settled_amount, NEW.last_evaluated_ref, NEW.last_evaluated_state_version, NEW.last_event_id)
        IS DISTINCT FROM
        (OLD.settlement_state_revision, OLD.settled_amount, OLD.last_evaluated_ref, OLD.last_evaluated_state_version, OLD.last_event_id) THEN
    RAISE EXCEPTION 'billing: catch-up fence % changed without a fencing token (only a reopen to the next generation may)',
      OLD.settlement_dimension_id USING ERRCODE = 'BC006';
  END IF;
  RETURN NEW;
END
$fn$;
-- Named after settlement_catch_up_fences_forward so the graph guard answers first.
CREATE TRIGGER settlement_catch_up_fences_token BEFORE UPDATE ON billing.settlement_catch_up_fences
  FOR EACH ROW EXECUTE FUNCTION billing.catch_up_fence_fenced();

-- The claim row follows its fence: created with it, reset to the new
-- generation (claimable now) when the generation moves, parked at
-- 'infinity' when caught up. A blocked fence keeps its row; the worker sets
-- its backoff.
CREATE FUNCTION billing.catch_up_claim_follow() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO billing.settlement_catch_up_claims (settlement_dimension_id, work_generation, available_at)
    VALUES (NEW.settlement_dimension_id, NEW.active_work_generation, '-infinity');
  ELSIF NEW.coordination_state = 'caught_up' THEN
    UPDATE billing.settlement_catch_up_claims SET available_at = 'infinity'
    WHERE settlement_dimension_id = NEW.settlement_dimension_id;
  ELSIF NEW.active_work_generation <> OLD.active_work_generation THEN
    UPDATE billing.settlement_catch_up_claims
    SET work_generation = NEW.active_work_generation, attempt_number = 0, available_at = '-infinity'
    WHERE settlement_dimension_id = NEW.settlement_dimension_id;
  END IF;
  RETURN NULL;
END
$fn$;
CREATE TRIGGER settlement_catch_up_fences_claim AFTER INSERT OR UPDATE ON billing.settlement_catch_up_fences
  FOR EACH ROW EXECUTE FUNCTION billing.catch_up_claim_follow();

-- Fences opened before this migration get their claim row.
INSERT INTO billing.settlement_catch_up_claims (settlement_dimension_id, work_generation, available_at)
SELECT settlement_dimension_id, active_work_generation,
       CASE WHEN coordination_state = 'caught_up' THEN 'infinity'::timestamptz ELSE '-infinity'::timestamptz END
FROM billing.settlement_catch_up_fences;

REVOKE ALL ON billing.settlement_catch_up_claims, billing.settlement_catch_up_attempts, billing.settlement_catch_up_blocks FROM PUBLIC;
REVOKE ALL ON FUNCTION billing.catch_up_attempt_start(), billing.catch_up_require_latest_token(uuid, bigint, uuid),
  billing.catch_up_attempt_fenced(), billing.catch_up_fence_fenced(), billing.catch_up_claim_follow() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION billing.catch_up_attempt_start(), billing.catch_up_require_latest_token(uuid, bigint, uuid),
  billing.catch_up_attempt_fenced(), billing.catch_up_fence_fenced(), billing.catch_up_claim_follow() TO oceanway_billing;
GRANT SELECT, INSERT ON billing.settlement_catch_up_attempts, billing.settlement_catch_up_blocks TO oceanway_billing;
-- Claim rows are scheduling state (never a business fact): the worker moves
-- attempt numbers and availability; the generation only follows the fence.
GRANT SELECT, INSERT ON billing.settlement_catch_up_claims TO oceanway_billing;
GRANT UPDATE (attempt_number, available_at, work_generation) ON billing.settlement_catch_up_claims TO oceanway_billing;
GRANT UPDATE (attempt_fencing_token) ON billing.settlement_catch_up_fences TO oceanway_billing;
-- +goose StatementEnd
