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
-- Objects: functions outbox.deliveries_check_transition (BEFORE UPDATE
-- trigger outbox_deliveries_transition), outbox.deliveries_prove_transition
-- (deferred constraint trigger outbox_deliveries_transition_proof),
-- outbox.outbox_events_check_envelope (BEFORE INSERT trigger
-- outbox_events_envelope); replaced: outbox.record_publication (same
-- signature, owner and grants).

-- +goose Up
-- +goose StatementBegin

----------------------------------------------------------------------------
-- Delivery transitions, part 1: the shape of the change, checked on the row
-- before it is written (immediate, so the lease is judged at the time of the
-- statement that moves it). statement_timestamp() is never later than the
-- clock_timestamp() the dispatcher's fences read, so a write whose fence
-- held always passes here.
--
--   pending → leased        fresh attempt id and token, attempt_count + 1,
--                           a lease in the future
--   leased  → leased        same owner, token and attempt; the old lease
--                           still valid (renewal) or the lease only shortened
--   leased  → acknowledged  same token and attempt, lease still valid, ack
--                           consumer/receipt type/schema = the frozen
--                           member's (also table checks)
--   leased  → pending       lease released, same attempt (retry, recovery)
--   leased  → quarantined   same attempt
--   pending → pending       attempt and lease columns unchanged
-- Everything else (e.g. pending → acknowledged) is refused. Terminal states
-- and frozen columns stay with outbox.deliveries_before_update (00002).
CREATE FUNCTION outbox.deliveries_check_transition() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  v_reason text;
BEGIN
  IF OLD.status IN ('acknowledged', 'quarantined')
     OR NEW.status NOT IN ('pending', 'leased', 'acknowledged', 'quarantined') THEN
    -- terminal: outbox.deliveries_before_update (OW008) decides; an unknown
    -- status: the table check outbox_deliveries_status refuses it
    RETURN NEW;
  END IF;
  v_reason := CASE
    WHEN OLD.status = 'pending' AND NEW.status = 'pending' THEN
      CASE WHEN (NEW.lease_owner, NEW.lease_token, NEW.lease_expires_at, NEW.current_attempt_id, NEW.attempt_count,
                 NEW.last_attempt_at)
                IS DISTINCT FROM
                (OLD.lease_owner, OLD.lease_token, OLD.lease_expires_at, OLD.current_attempt_id, OLD.attempt_count,
                 OLD.last_attempt_at)
        THEN 'a pending delivery changes no lease or attempt column' END
    WHEN OLD.status = 'pending' AND NEW.status = 'leased' THEN
      CASE
        WHEN NEW.current_attempt_id IS NOT DISTINCT FROM OLD.current_attempt_id
          OR NEW.lease_token IS NOT DISTINCT FROM OLD.lease_token
          THEN 'a claim takes a fresh attempt id and lease token'
        WHEN NEW.attempt_count <> OLD.attempt_count + 1
          THEN 'a claim counts exactly one more attempt'
        WHEN NEW.lease_expires_at <= statement_timestamp()
          THEN 'a claim takes a lease that ends in the future'
      END
    WHEN OLD.status = 'pending'
      THEN format('%s only from leased', NEW.status)
    -- OLD.status = 'leased' from here on
    WHEN (NEW.current_attempt_id, NEW.attempt_count) IS DISTINCT FROM (OLD.current_attempt_id, OLD.attempt_count)
      THEN 'the current attempt of a leased delivery changes only by a claim'
    WHEN NEW.status = 'leased' THEN
      CASE
        WHEN (NEW.lease_owner, NEW.lease_token) IS DISTINCT FROM (OLD.lease_owner, OLD.lease_token)
          THEN 'a renewal keeps the lease owner and token'
        WHEN NEW.lease_expires_at > OLD.lease_expires_at AND OLD.lease_expires_at <= statement_timestamp()
          THEN 'an expired lease cannot be renewed'
      END
    WHEN NEW.status = 'acknowledged' THEN
      CASE
        WHEN (NEW.lease_owner, NEW.lease_token, NEW.lease_expires_at)
             IS DISTINCT FROM (OLD.lease_owner, OLD.lease_token, OLD.lease_expires_at)
          THEN 'an ack keeps the lease it was fenced by'
        WHEN OLD.lease_expires_at <= statement_timestamp()
          THEN 'an ack needs a lease that has not expired'
        WHEN (NEW.ack_consumer_name, NEW.ack_receipt_type, NEW.ack_receipt_schema_version)
             IS DISTINCT FROM (NEW.consumer_name, NEW.expected_receipt_type, NEW.expected_receipt_schema_version)
          THEN 'the ack consumer, receipt type or schema version is not the frozen member''s'
      END
    WHEN NEW.status = 'pending' THEN
      CASE WHEN num_nonnulls(NEW.lease_owner, NEW.lease_token, NEW.lease_expires_at) <> 0
        THEN 'a delivery returns to pending without its lease' END
    WHEN NEW.status = 'quarantined'
      THEN NULL
  END;
  IF v_reason IS NOT NULL THEN
    RAISE EXCEPTION 'outbox: delivery %/% % → %: %', OLD.event_id, OLD.destination, OLD.status, NEW.status, v_reason
      USING ERRCODE = 'OW019';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER outbox_deliveries_transition BEFORE UPDATE ON outbox.outbox_deliveries
  FOR EACH ROW EXECUTE FUNCTION outbox.deliveries_check_transition();

----------------------------------------------------------------------------
-- Delivery transitions, part 2: the facts each transition stands on,
-- proven at COMMIT (the dispatcher writes the fact in the same statement or
-- transaction, in either order):
--   → leased        the attempt start of exactly NEW.current_attempt_id and
--                   NEW.lease_token for this delivery, inserted by this
--                   transaction
--   → acknowledged  an acknowledged finish of the current attempt, whose
--                   start carries the lease token the ack was fenced by, and
--                   an ack envelope digest equal to the event's stored one
--                   (checked here, not on the row, so that the dispatcher's
--                   outbox.record_publication in the same transaction reports
--                   a wrong digest first, as OW009)
--   leased → pending a retry_scheduled or reclaimable finish of that attempt
--   → quarantined   a quarantined finish of that attempt (the quarantine
--                   row itself: outbox.prove_quarantine, 00002)
CREATE FUNCTION outbox.deliveries_prove_transition() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  v_proven boolean;
BEGIN
  IF NEW.status = 'leased' THEN
    SELECT EXISTS (SELECT 1 FROM outbox.outbox_delivery_attempt_starts s
                    WHERE s.attempt_id = NEW.current_attempt_id AND s.event_id = NEW.event_id
                      AND s.destination = NEW.destination AND s.lease_token = NEW.lease_token
                      AND s.xmin = pg_current_xact_id()::xid)
      INTO v_proven;
  ELSE
    SELECT EXISTS (SELECT 1 FROM outbox.outbox_delivery_attempt_starts s
                     JOIN outbox.outbox_delivery_attempt_finishes f ON f.attempt_id = s.attempt_id
                    WHERE s.attempt_id = OLD.current_attempt_id AND s.event_id = NEW.event_id
                      AND s.destination = NEW.destination AND s.lease_token = OLD.lease_token
                      AND CASE NEW.status
                            WHEN 'acknowledged' THEN f.outcome = 'acknowledged'
                              AND EXISTS (SELECT 1 FROM outbox.outbox_events e
                                           WHERE e.event_id = NEW.event_id
                                             AND e.event_envelope_digest_algorithm_version = NEW.ack_event_envelope_digest_algorithm_version
                                             AND e.event_envelope_sha256 = NEW.ack_event_envelope_sha256)
                            WHEN 'pending' THEN f.retry_disposition IN ('retry_scheduled', 'reclaimable')
                            WHEN 'quarantined' THEN f.retry_disposition = 'quarantined'
                          END)
      INTO v_proven;
  END IF;
  IF NOT v_proven THEN
    RAISE EXCEPTION 'outbox: delivery %/% became % without %', NEW.event_id, NEW.destination, NEW.status,
      CASE NEW.status
        WHEN 'leased' THEN 'the attempt start of that attempt id and lease token in the same transaction'
        WHEN 'acknowledged' THEN 'an acknowledged finish of the attempt its lease fenced and the event''s envelope digest'
        ELSE 'a finish of the leased attempt'
      END
      USING ERRCODE = 'OW019';
  END IF;
  RETURN NULL;
END
$fn$;
CREATE CONSTRAINT TRIGGER outbox_deliveries_transition_proof AFTER UPDATE ON outbox.outbox_deliveries
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (NEW.status IS DISTINCT FROM OLD.status
        AND NOT (OLD.status = 'pending' AND NEW.status = 'pending'))
  EXECUTE FUNCTION outbox.deliveries_prove_transition();

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

----------------------------------------------------------------------------
-- OB-PUB-1: a sibling counts as done only with its proof: an acknowledged
-- finish of its current attempt and a frozen ack equal to the member and
-- the event (checked inline below, before 'complete').
-- record_publication (00003) with the sibling proof: unchanged contract and
-- signature; the caller passes the ack's own event id and receipt
-- coordinates (dispatcher/ack_batcher.go), which are compared with the
-- frozen member, the event and the recorded ack.
CREATE OR REPLACE FUNCTION outbox.record_publication(
  p_event_id                                    uuid,
  p_destination                                 text,
  p_consumer_name                               text,
  p_attempt_id                                  uuid,
  p_lease_token                                 uuid,
  p_ack_receipt_type                            text,
  p_ack_receipt_key                             text,
  p_ack_receipt_schema_version                  text,
  p_ack_receipt_digest_algorithm_version        text,
  p_ack_receipt_digest                          text,
  p_ack_event_envelope_digest_algorithm_version text,
  p_ack_event_envelope_sha256                   text)
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  e outbox.outbox_events%ROWTYPE;
  d outbox.outbox_deliveries%ROWTYPE;
  m outbox.delivery_set_members%ROWTYPE;
  v_reason     text;
  v_unproven   text;
BEGIN
  IF current_setting('transaction_isolation') <> 'read committed' THEN
    RAISE EXCEPTION 'outbox.record_publication runs under READ COMMITTED, not %', current_setting('transaction_isolation')
      USING ERRCODE = 'OW013';
  END IF;
  IF num_nulls(p_event_id, p_destination, p_consumer_name, p_attempt_id, p_lease_token, p_ack_receipt_type,
       p_ack_receipt_key, p_ack_receipt_schema_version, p_ack_receipt_digest_algorithm_version, p_ack_receipt_digest,
       p_ack_event_envelope_digest_algorithm_version, p_ack_event_envelope_sha256) <> 0 THEN
    RAISE EXCEPTION 'outbox.record_publication: every argument is required' USING ERRCODE = 'OW009';
  END IF;

  SELECT * INTO e FROM outbox.outbox_events WHERE event_id = p_event_id FOR NO KEY UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'outbox.record_publication: unknown event %', p_event_id USING ERRCODE = 'OW009';
  END IF;
  SELECT * INTO d FROM outbox.outbox_deliveries WHERE event_id = p_event_id AND destination = p_destination;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'outbox.record_publication: event % has no delivery to %', p_event_id, p_destination
      USING ERRCODE = 'OW009';
  END IF;
  SELECT * INTO m FROM outbox.delivery_set_members
   WHERE delivery_set_version = e.delivery_set_version AND event_type = e.event_type
     AND schema_version = e.schema_version AND destination = p_destination;

  v_reason := CASE
    WHEN m.delivery_set_version IS NULL OR NOT m.mandatory
      THEN 'destination is not a mandatory member of the event''s frozen definition'
    WHEN d.delivery_set_version <> e.delivery_set_version
      THEN 'delivery and event froze different definitions'
    WHEN p_consumer_name <> m.consumer_name OR d.consumer_name <> m.consumer_name
      THEN 'consumer does not match the frozen destination → consumer mapping'
    WHEN p_ack_receipt_type <> m.expected_receipt_type OR p_ack_receipt_schema_version <> m.expected_receipt_schema_version
      OR d.expected_receipt_type <> m.expected_receipt_type OR d.expected_receipt_schema_version <> m.expected_receipt_schema_version
      THEN 'receipt type or schema version does not match the frozen member'
    WHEN d.required_projection_name IS DISTINCT FROM m.projection_name
      OR d.required_projection_version IS DISTINCT FROM m.projection_version
      THEN 'delivery projection target does not match the frozen member'
    WHEN p_ack_event_envelope_digest_algorithm_version <> e.event_envelope_digest_algorithm_version
      OR p_ack_event_envelope_sha256 <> e.event_envelope_sha256
      THEN 'ack envelope digest does not match the event'
    WHEN d.status <> 'acknowledged'
      THEN 'delivery is not acknowledged'
    WHEN (d.ack_consumer_name, d.ack_receipt_type, d.ack_receipt_key, d.ack_receipt_schema_version,
          d.ack_receipt_digest_algorithm_version, d.ack_receipt_digest,
          d.ack_event_envelope_digest_algorithm_version, d.ack_event_envelope_sha256)
      IS DISTINCT FROM
         (p_consumer_name, p_ack_receipt_type, p_ack_receipt_key, p_ack_receipt_schema_version,
          p_ack_receipt_digest_algorithm_version, p_ack_receipt_digest,
          p_ack_event_envelope_digest_algorithm_version, p_ack_event_envelope_sha256)
      THEN 'delivery was acknowledged with other receipt coordinates'
    WHEN d.current_attempt_id IS DISTINCT FROM p_attempt_id OR d.lease_token IS DISTINCT FROM p_lease_token
      THEN 'attempt or lease token is not the delivery''s current one'
    WHEN NOT EXISTS (SELECT 1 FROM outbox.outbox_delivery_attempt_starts s
                       JOIN outbox.outbox_delivery_attempt_finishes f ON f.attempt_id = s.attempt_id
                      WHERE s.attempt_id = p_attempt_id AND s.event_id = p_event_id
                        AND s.destination = p_destination AND s.lease_token = p_lease_token
                        AND f.outcome = 'acknowledged')
      THEN 'attempt start with this lease token has no acknowledged finish'
  END;
  IF v_reason IS NOT NULL THEN
    RAISE EXCEPTION 'outbox.record_publication: invalid ack for event % destination %: %', p_event_id, p_destination, v_reason
      USING ERRCODE = 'OW009';
  END IF;

  IF NOT outbox.all_mandatory_acknowledged(p_event_id) THEN
    RETURN 'not_complete';
  END IF;
  -- The sibling proof: the first mandatory acknowledged delivery without an
  -- acknowledged finish of its current attempt or a frozen ack equal to its
  -- member and the event (inline SQL, so PL/pgSQL caches its plan).
  SELECT d2.destination INTO v_unproven
    FROM outbox.outbox_deliveries d2
   WHERE d2.event_id = p_event_id AND d2.mandatory AND d2.status = 'acknowledged'
     AND NOT (d2.ack_consumer_name = d2.consumer_name
              AND d2.ack_receipt_type = d2.expected_receipt_type
              AND d2.ack_receipt_schema_version = d2.expected_receipt_schema_version
              AND d2.ack_event_envelope_digest_algorithm_version = e.event_envelope_digest_algorithm_version
              AND d2.ack_event_envelope_sha256 = e.event_envelope_sha256
              AND EXISTS (SELECT 1 FROM outbox.outbox_delivery_attempt_starts s
                            JOIN outbox.outbox_delivery_attempt_finishes f ON f.attempt_id = s.attempt_id
                           WHERE s.attempt_id = d2.current_attempt_id AND s.event_id = d2.event_id
                             AND s.destination = d2.destination AND s.lease_token = d2.lease_token
                             AND f.outcome = 'acknowledged'))
   ORDER BY d2.destination
   LIMIT 1;
  IF v_unproven IS NOT NULL THEN
    RAISE EXCEPTION 'outbox.record_publication: event % delivery to % is acknowledged without an acknowledged finish or a frozen ack equal to its member and event',
      p_event_id, v_unproven USING ERRCODE = 'OW009';
  END IF;
  UPDATE outbox.outbox_events SET published_at = now() WHERE event_id = p_event_id AND published_at IS NULL;
  RETURN 'complete';
END
$fn$;

REVOKE ALL ON FUNCTION
  outbox.deliveries_check_transition(),
  outbox.deliveries_prove_transition(),
  outbox.outbox_events_check_envelope()
  FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox.deliveries_check_transition(), outbox.deliveries_prove_transition()
  TO oceanway_dispatcher, oceanway_outbox_definer;
GRANT EXECUTE ON FUNCTION outbox.outbox_events_check_envelope() TO oceanway_producer, oceanway_outbox_definer;
-- +goose StatementEnd
