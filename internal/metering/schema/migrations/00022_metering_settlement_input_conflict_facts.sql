-- SettlementInputConflictFact@1 (issue 32): Metering's durable owner
-- conflict about one settlement input five-tuple. When Billing's catch-up
-- asks validateSettlementInputCurrent (purposes billing_catch_up_fence and
-- post_finalization_transition) about a dimension whose attempt's
-- eligibility Work is Blocked@1 on an owner's conflict fact (the lane is
-- blocked_on_owner_conflict: a newer input exists that Metering cannot
-- form), Metering cannot vouch that the input is the dimension's last: it
-- stores this fact, insert-or-compare on (dimension, state version, block),
-- and answers conflicting with its quadruple, which the catch-up binds in
-- BillingSettlementCatchUpWorkAttemptBlocked@1 (fence
-- blocked_on_owner_conflict) until the owner's fix lets the Work apply.
--
--   ME001 (extended) insert-only: UPDATE, DELETE and TRUNCATE refused for
--         every role, the superuser included.
--   ME017 a forged fact: its columns must equal its canonical body, which
--         must name the stored snapshot it is about and the stored owner
--         block (Blocked@1 quadruple, owner branch and owner fact).

-- +goose Up
-- +goose StatementBegin
CREATE TABLE metering.settlement_input_conflict_facts (
  settlement_input_conflict_fact_ref                      text        NOT NULL PRIMARY KEY,
  settlement_input_conflict_fact_schema_version           text        NOT NULL CHECK (settlement_input_conflict_fact_schema_version = '1'),
  settlement_input_conflict_fact_digest_algorithm_version text        NOT NULL CHECK (settlement_input_conflict_fact_digest_algorithm_version = 'jcs-sha256-v1'),
  settlement_input_conflict_fact_digest                   text        NOT NULL CHECK (settlement_input_conflict_fact_digest ~ '^[0-9a-f]{64}$'),
  settlement_dimension_id                                 uuid        NOT NULL,
  validated_state_version                                 bigint      NOT NULL,
  blocked_ref                                             text        NOT NULL REFERENCES metering.work_blocks (blocked_ref),
  fact_body                                               text        NOT NULL,
  detected_at                                             timestamptz NOT NULL,
  UNIQUE (settlement_dimension_id, validated_state_version, blocked_ref),
  FOREIGN KEY (settlement_dimension_id, validated_state_version)
    REFERENCES metering.settlement_input_snapshots (settlement_dimension_id, state_version)
);

CREATE FUNCTION metering.guard_settlement_input_conflict_fact() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  j jsonb;
  s metering.settlement_input_snapshots;
  b metering.work_blocks;
BEGIN
  j := NEW.fact_body::jsonb;
  SELECT * INTO s FROM metering.settlement_input_snapshots
   WHERE settlement_dimension_id = NEW.settlement_dimension_id AND state_version = NEW.validated_state_version;
  SELECT * INTO b FROM metering.work_blocks WHERE blocked_ref = NEW.blocked_ref;
  IF /* guard ME017.conflict-fact-forged */ jsonb_typeof(j) IS DISTINCT FROM 'object' OR b.owner_conflict_kind IS NULL OR
     (j->>'settlementInputConflictFactRef', j->>'settlementInputConflictFactSchemaVersion',
      j->>'settlementInputConflictFactDigestAlgorithmVersion', j->>'settlementInputConflictFactDigest',
      j->>'settlementDimensionId', (j->>'settlementInputStateVersion')::bigint, j->>'meteringInputWorkAttemptBlockedRef')
     IS DISTINCT FROM
     (NEW.settlement_input_conflict_fact_ref, NEW.settlement_input_conflict_fact_schema_version,
      NEW.settlement_input_conflict_fact_digest_algorithm_version, NEW.settlement_input_conflict_fact_digest,
      NEW.settlement_dimension_id::text, NEW.validated_state_version, NEW.blocked_ref) OR
     (j->>'settlementInputSnapshotRef', j->>'settlementInputSnapshotDigest',
      j->>'meteringInputWorkAttemptBlockedDigest', j->>'blockingCauseKind',
      j->>'ownerConflictFactRef', j->>'ownerConflictFactSchemaVersion',
      j->>'ownerConflictFactDigestAlgorithmVersion', j->>'ownerConflictFactDigest')
     IS DISTINCT FROM
     (s.snapshot_ref, s.snapshot_digest, b.blocked_digest, b.owner_conflict_kind,
      b.owner_conflict_fact_ref, b.owner_conflict_fact_schema_version,
      b.owner_conflict_fact_digest_algorithm_version, b.owner_conflict_fact_digest) THEN
    RAISE EXCEPTION 'metering: settlement input conflict fact % does not describe what it stores, its snapshot or its owner block %',
      NEW.settlement_input_conflict_fact_ref, NEW.blocked_ref
      USING ERRCODE = 'ME017';
  END IF;
  RETURN NEW;
END
$fn$;

CREATE TRIGGER settlement_input_conflict_facts_guard BEFORE INSERT ON metering.settlement_input_conflict_facts
  FOR EACH ROW EXECUTE FUNCTION metering.guard_settlement_input_conflict_fact();
CREATE TRIGGER /* guard ME001.settlement-conflict-facts-insert-only */ settlement_input_conflict_facts_insert_only
  BEFORE UPDATE OR DELETE ON metering.settlement_input_conflict_facts
  FOR EACH ROW EXECUTE FUNCTION metering.reject_change();
CREATE TRIGGER /* guard ME001.settlement-conflict-facts-no-truncate */ settlement_input_conflict_facts_no_truncate
  BEFORE TRUNCATE ON metering.settlement_input_conflict_facts
  FOR EACH STATEMENT EXECUTE FUNCTION metering.reject_change();

REVOKE ALL ON metering.settlement_input_conflict_facts FROM PUBLIC;
REVOKE ALL ON FUNCTION metering.guard_settlement_input_conflict_fact() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION metering.guard_settlement_input_conflict_fact() TO oceanway_metering;
GRANT SELECT, INSERT ON metering.settlement_input_conflict_facts TO oceanway_metering;
-- +goose StatementEnd

-- +goose Down
-- forward-only
