-- ME-1 in the database (review finding 3): a SettlementInputSnapshot@1
-- version commits only together with its Current pointer move, its
-- metering.settlement-input.current-changed@1 event (aggregate = settlement
-- dimension id, revision = state version, naming exactly this snapshot) and
-- that event's billing_settlement_catch_up delivery; and the snapshot body
-- says what its columns say. Before this the atomicity lived only in Go: the
-- metering role could commit a forged body and move the pointer with no event.
--
-- Custom SQLSTATE: ME005 settlement input not atomic: at COMMIT a snapshot
--                        version lacks its pointer move, its event or the
--                        event's billing delivery, or its body's predecessor
--                        is not the stored predecessor.
-- Body/column mismatches fail the CHECK constraints (23514).

-- +goose Up
-- +goose StatementBegin
ALTER TABLE metering.settlement_input_snapshots
  ADD CONSTRAINT settlement_input_snapshots_body_identity CHECK (
        (snapshot_body::jsonb ->> 'settlementInputSnapshotRef') IS NOT DISTINCT FROM snapshot_ref
    AND (snapshot_body::jsonb ->> 'settlementInputSnapshotSchemaVersion') IS NOT DISTINCT FROM snapshot_schema_version
    AND (snapshot_body::jsonb ->> 'settlementInputSnapshotDigestAlgorithmVersion') IS NOT DISTINCT FROM snapshot_digest_algorithm_version
    AND (snapshot_body::jsonb ->> 'settlementInputSnapshotDigest') IS NOT DISTINCT FROM snapshot_digest
    AND (snapshot_body::jsonb -> 'settlementInputStateVersion') IS NOT DISTINCT FROM to_jsonb(state_version)
    AND (snapshot_body::jsonb ->> 'settlementDimensionId') IS NOT DISTINCT FROM settlement_dimension_id::text
    AND (snapshot_body::jsonb ->> 'billingReservationId') IS NOT DISTINCT FROM billing_reservation_id::text
    AND (snapshot_body::jsonb ->> 'runId') IS NOT DISTINCT FROM run_id::text
    AND (snapshot_body::jsonb ->> 'runStepId') IS NOT DISTINCT FROM run_step_id::text
    AND (snapshot_body::jsonb ->> 'executionAttemptId') IS NOT DISTINCT FROM execution_attempt_id::text
    AND (snapshot_body::jsonb ->> 'chargeDimensionKey') IS NOT DISTINCT FROM charge_dimension_key
    AND (snapshot_body::jsonb ->> 'reconciliationState') IS NOT DISTINCT FROM reconciliation_state),
  ADD CONSTRAINT settlement_input_snapshots_body_amount CHECK (
    jsonb_typeof(snapshot_body::jsonb -> 'targetNetAmount') = 'string'
    AND (snapshot_body::jsonb ->> 'targetNetAmount') ~ '^(0|[1-9][0-9]*)(\.[0-9]+)?$'
    AND (snapshot_body::jsonb ->> 'targetNetAmount')::numeric = target_net_amount),
  ADD CONSTRAINT settlement_input_snapshots_body_predecessor CHECK (
    CASE WHEN predecessor_state_version IS NULL
      THEN (snapshot_body::jsonb #>> '{predecessorSettlementInput,state}') IS NOT DISTINCT FROM 'none'
      ELSE (snapshot_body::jsonb #>> '{predecessorSettlementInput,state}') IS NOT DISTINCT FROM 'present'
        AND (snapshot_body::jsonb #>> '{predecessorSettlementInput,settlementInputSnapshotRef}') IS NOT DISTINCT FROM predecessor_snapshot_ref
        AND (snapshot_body::jsonb #> '{predecessorSettlementInput,settlementInputStateVersion}') IS NOT DISTINCT FROM to_jsonb(predecessor_state_version)
    END);

-- Checked at COMMIT (deferred), when the worker's one transaction has
-- written snapshot, pointer, event and delivery in whatever order. Index
-- backed: pointer PK, outbox_events_aggregate, deliveries PK, snapshots PK.
-- SECURITY DEFINER: the check reads the outbox whatever the writer may read.
CREATE FUNCTION metering.settlement_input_committed_atomically() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  pointer_version bigint;
  event           uuid;
BEGIN
  IF NEW.predecessor_state_version IS NOT NULL AND NOT EXISTS (
      SELECT 1 FROM metering.settlement_input_snapshots p
      WHERE p.settlement_dimension_id = NEW.settlement_dimension_id AND p.state_version = NEW.predecessor_state_version
        AND p.snapshot_ref = NEW.predecessor_snapshot_ref
        AND p.snapshot_digest = NEW.snapshot_body::jsonb #>> '{predecessorSettlementInput,settlementInputSnapshotDigest}') THEN
    RAISE EXCEPTION 'metering: settlement input % version % names a predecessor digest that is not stored', NEW.settlement_dimension_id, NEW.state_version
      USING ERRCODE = 'ME005';
  END IF;
  -- The pointer only moves one version at a time onto its own chain, so a
  -- pointer at or past this version passed through exactly this snapshot.
  SELECT state_version INTO pointer_version FROM metering.settlement_input_current
  WHERE settlement_dimension_id = NEW.settlement_dimension_id;
  IF pointer_version IS NULL OR pointer_version < NEW.state_version THEN
    RAISE EXCEPTION 'metering: settlement input % version % committed without its Current pointer move', NEW.settlement_dimension_id, NEW.state_version
      USING ERRCODE = 'ME005';
  END IF;
  SELECT e.event_id INTO event FROM outbox.outbox_events e
  WHERE e.aggregate_type = 'settlement_input_dimension' AND e.aggregate_id = NEW.settlement_dimension_id::text
    AND e.aggregate_revision = NEW.state_version AND e.event_type = 'metering.settlement-input.current-changed@1'
    AND e.event_payload ->> 'settlementInputSnapshotRef' = NEW.snapshot_ref
    AND e.event_payload ->> 'settlementInputSnapshotDigest' = NEW.snapshot_digest;
  IF event IS NULL THEN
    RAISE EXCEPTION 'metering: settlement input % version % committed without its metering.settlement-input.current-changed@1 event',
      NEW.settlement_dimension_id, NEW.state_version USING ERRCODE = 'ME005';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM outbox.outbox_deliveries d WHERE d.event_id = event AND d.destination = 'billing_settlement_catch_up') THEN
    RAISE EXCEPTION 'metering: the settlement input event % has no billing_settlement_catch_up delivery', event USING ERRCODE = 'ME005';
  END IF;
  RETURN NULL;
END
$fn$;
CREATE CONSTRAINT TRIGGER settlement_input_snapshots_committed_atomically
  AFTER INSERT ON metering.settlement_input_snapshots DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION metering.settlement_input_committed_atomically();
REVOKE ALL ON FUNCTION metering.settlement_input_committed_atomically() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION metering.settlement_input_committed_atomically() TO oceanway_metering;
-- +goose StatementEnd
