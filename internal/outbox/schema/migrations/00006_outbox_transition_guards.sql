-- The database as the second, independent guard of the delivery state
-- machine, the publication function and the event columns (OB-STORE-2,
-- OB-STORE-6, OB-PUB-1; issue 18). The dispatcher's own statements are
-- unchanged: triggers prove each transition instead of SECURITY DEFINER
-- transition functions (docs/outbox-storage.md, "Delivery transitions",
-- says why; the cost is measured in the issue-18 closing note).
--
-- New SQLSTATEs (class OW, internal/outbox/errors.go):
--   OW018 an event column contradicts the event's own stored envelope
--   OW019 a delivery state change that is not a proven transition
--
-- Objects: function outbox.deliveries_prove_transitions (statement-level
-- AFTER UPDATE trigger outbox_deliveries_transition, transition tables),
-- function outbox.outbox_events_check_envelope (BEFORE INSERT trigger
-- outbox_events_envelope). The publication side of the same guard lives
-- with the functions it belongs to (folded there, the line is unreleased):
-- outbox.prove_publication (00005) also proves the ack envelope digest, and
-- outbox.record_publication (00003) proves every sibling it counts as done.

-- +goose Up
-- +goose StatementBegin

----------------------------------------------------------------------------
-- Delivery transitions (OB-STORE-6). One statement-level trigger with
-- transition tables proves every row a statement changed, set-based, at the
-- end of that statement (the dispatcher writes each transition and its fact
-- in one statement). statement_timestamp() is never later than the
-- clock_timestamp() the dispatcher's fences read, so a write whose fence held
-- always passes.
--
--   pending → pending       no lease or attempt column changes
--   pending → leased        fresh attempt id and token, attempt_count + 1, a
--                           lease in the future, and the attempt start of
--                           exactly that attempt id and token for this
--                           delivery, inserted by this transaction
--   leased  → leased        same owner, token and attempt; the old lease
--                           still valid (renewal) or only shortened
--   leased  → acknowledged  same lease and attempt, the lease still valid,
--                           ack consumer/receipt type/schema = the frozen
--                           member's, an acknowledged finish of that attempt
--                           whose start carries the lease token (the ack
--                           envelope digest: outbox.prove_publication below,
--                           at COMMIT)
--   leased  → pending       lease released, same attempt, a retry_scheduled
--                           or reclaimable finish of it (retry, recovery)
--   leased  → quarantined   same attempt, a quarantined finish of it (the
--                           quarantine row: outbox.prove_quarantine, OW014)
-- Nothing else leaves pending. Terminal states and frozen columns stay with
-- outbox.deliveries_before_update (00002, OW008/OW001), the closed status set
-- and the lease/ack completeness with the table checks.
CREATE FUNCTION outbox.deliveries_prove_transitions() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  v record;
BEGIN
  SELECT x.event_id, x.destination, x.old_status, x.new_status, x.reason INTO v
    FROM (
      SELECT n.event_id, n.destination, o.status AS old_status, n.status AS new_status,
        CASE
          WHEN o.status = 'pending' AND n.status = 'pending' THEN
            CASE WHEN (n.lease_owner, n.lease_token, n.lease_expires_at, n.current_attempt_id, n.attempt_count, n.last_attempt_at)
                      IS DISTINCT FROM
                      (o.lease_owner, o.lease_token, o.lease_expires_at, o.current_attempt_id, o.attempt_count, o.last_attempt_at)
              THEN 'a pending delivery changes no lease or attempt column' END
          WHEN o.status = 'pending' AND n.status = 'leased' THEN
            CASE
              WHEN n.current_attempt_id IS NOT DISTINCT FROM o.current_attempt_id
                OR n.lease_token IS NOT DISTINCT FROM o.lease_token
                THEN 'a claim takes a fresh attempt id and lease token'
              WHEN n.attempt_count <> o.attempt_count + 1 THEN 'a claim counts exactly one more attempt'
              WHEN n.lease_expires_at <= statement_timestamp() THEN 'a claim takes a lease that ends in the future'
              WHEN s.attempt_id IS NULL OR s.event_id <> n.event_id OR s.destination <> n.destination
                OR s.lease_token <> n.lease_token OR NOT (s.xmin = pg_current_xact_id()::xid)
                THEN 'a lease needs the attempt start of exactly that attempt id and lease token, in the same transaction'
            END
          WHEN o.status = 'pending' THEN n.status || ' only from leased'
          WHEN o.status <> 'leased' OR n.status = o.status AND n IS NOT DISTINCT FROM o THEN NULL -- terminal, unchanged
          WHEN (n.current_attempt_id, n.attempt_count) IS DISTINCT FROM (o.current_attempt_id, o.attempt_count)
            THEN 'the current attempt of a leased delivery changes only by a claim'
          WHEN n.status = 'leased' THEN
            CASE
              WHEN (n.lease_owner, n.lease_token) IS DISTINCT FROM (o.lease_owner, o.lease_token)
                THEN 'a renewal keeps the lease owner and token'
              WHEN n.lease_expires_at > o.lease_expires_at AND o.lease_expires_at <= statement_timestamp()
                THEN 'an expired lease cannot be renewed'
            END
          WHEN n.status = 'acknowledged' THEN
            CASE
              WHEN (n.lease_owner, n.lease_token, n.lease_expires_at) IS DISTINCT FROM (o.lease_owner, o.lease_token, o.lease_expires_at)
                THEN 'an ack keeps the lease it was fenced by'
              WHEN o.lease_expires_at <= statement_timestamp() THEN 'an ack needs a lease that has not expired'
              WHEN (n.ack_consumer_name, n.ack_receipt_type, n.ack_receipt_schema_version)
                   IS DISTINCT FROM (n.consumer_name, n.expected_receipt_type, n.expected_receipt_schema_version)
                THEN 'the ack consumer, receipt type or schema version is not the frozen member''s'
              WHEN s.attempt_id IS NULL OR s.event_id <> n.event_id OR s.destination <> n.destination
                OR s.lease_token <> o.lease_token OR f.outcome IS DISTINCT FROM 'acknowledged'
                THEN 'an ack needs an acknowledged finish of the attempt its lease fenced'
            END
          WHEN n.status = 'pending' THEN
            CASE
              WHEN num_nonnulls(n.lease_owner, n.lease_token, n.lease_expires_at) <> 0
                THEN 'a delivery returns to pending without its lease'
              WHEN s.attempt_id IS NULL OR s.event_id <> n.event_id OR s.destination <> n.destination
                OR s.lease_token <> o.lease_token OR f.retry_disposition IS NULL
                OR f.retry_disposition NOT IN ('retry_scheduled', 'reclaimable')
                THEN 'pending after a lease needs a retry_scheduled or reclaimable finish of that attempt'
            END
          WHEN n.status = 'quarantined' THEN
            CASE
              WHEN s.attempt_id IS NULL OR s.event_id <> n.event_id OR s.destination <> n.destination
                OR s.lease_token <> o.lease_token OR f.retry_disposition IS DISTINCT FROM 'quarantined'
                THEN 'a quarantine needs a quarantined finish of the leased attempt'
            END
        END AS reason
        FROM old_rows o
        JOIN new_rows n ON n.event_id = o.event_id AND n.destination = o.destination
        LEFT JOIN outbox.outbox_delivery_attempt_starts s
          ON s.attempt_id = CASE WHEN o.status = 'pending' THEN n.current_attempt_id ELSE o.current_attempt_id END
        LEFT JOIN outbox.outbox_delivery_attempt_finishes f ON f.attempt_id = s.attempt_id
    ) x
   WHERE x.reason IS NOT NULL
   LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'outbox: delivery %/% % → %: %', v.event_id, v.destination, v.old_status, v.new_status, v.reason
      USING ERRCODE = 'OW019';
  END IF;
  RETURN NULL;
END
$fn$;
CREATE TRIGGER outbox_deliveries_transition AFTER UPDATE ON outbox.outbox_deliveries
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION outbox.deliveries_prove_transitions();


----------------------------------------------------------------------------
-- Events cannot contradict their envelope (OB-STORE-2). Every column
-- derived from the envelope is compared with the stored canonical envelope;
-- the envelope digest is computed by the contracts implementation (the
-- database cannot recompute RFC 8785), and its form is a table check.
CREATE FUNCTION outbox.outbox_events_check_envelope() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  j        jsonb;
  v_column text;
BEGIN
  j := NEW.event_envelope::jsonb;
  v_column := CASE
    WHEN jsonb_typeof(j) IS DISTINCT FROM 'object' THEN 'event_envelope'
    WHEN j->>'eventId' IS DISTINCT FROM NEW.event_id::text THEN 'event_id'
    WHEN j->>'eventType' IS DISTINCT FROM NEW.event_type THEN 'event_type'
    WHEN j->>'eventSchemaVersion' IS DISTINCT FROM NEW.schema_version THEN 'schema_version'
    WHEN j->>'aggregateType' IS DISTINCT FROM NEW.aggregate_type THEN 'aggregate_type'
    WHEN j->>'aggregateId' IS DISTINCT FROM NEW.aggregate_id THEN 'aggregate_id'
    WHEN j->'aggregateRevision' IS DISTINCT FROM to_jsonb(NEW.aggregate_revision) THEN 'aggregate_revision'
    WHEN j->>'tenantKind' IS DISTINCT FROM NEW.tenant_kind THEN 'tenant_kind'
    WHEN j->>'tenantId' IS DISTINCT FROM NEW.tenant_id THEN 'tenant_id'
    WHEN j->>'workspaceId' IS DISTINCT FROM NEW.workspace_id THEN 'workspace_id'
    WHEN j->>'projectId' IS DISTINCT FROM NEW.project_id THEN 'project_id'
    WHEN j->>'correlationId' IS DISTINCT FROM NEW.correlation_id THEN 'correlation_id'
    WHEN j->>'causationId' IS DISTINCT FROM NEW.causation_id THEN 'causation_id'
    WHEN j->>'operationId' IS DISTINCT FROM NEW.operation_id THEN 'operation_id'
    WHEN j->'payload' IS DISTINCT FROM NEW.event_payload THEN 'event_payload'
    WHEN CASE WHEN (j->>'occurredAt') ~ '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z$'
              THEN (j->>'occurredAt')::timestamptz IS DISTINCT FROM NEW.occurred_at
              ELSE true END THEN 'occurred_at'
  END;
  IF v_column IS NOT NULL THEN
    RAISE EXCEPTION 'outbox: event % column % contradicts its envelope', NEW.event_id, v_column
      USING ERRCODE = 'OW018';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER outbox_events_envelope BEFORE INSERT ON outbox.outbox_events
  FOR EACH ROW EXECUTE FUNCTION outbox.outbox_events_check_envelope();


REVOKE ALL ON FUNCTION
  outbox.deliveries_prove_transitions(),
  outbox.outbox_events_check_envelope()
  FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox.deliveries_prove_transitions() TO oceanway_dispatcher, oceanway_outbox_definer;
GRANT EXECUTE ON FUNCTION outbox.outbox_events_check_envelope() TO oceanway_producer, oceanway_outbox_definer;
-- +goose StatementEnd
