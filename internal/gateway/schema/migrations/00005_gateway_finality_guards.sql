-- Finality guards of the Gateway owner (issue 30): PostgreSQL itself refuses
-- forged Gateway writes, even as oceanway_gateway, with stable SQLSTATEs
-- (docs/execution-gateway.md lists them with the rule each guards).
--
--   GW001 (extended) TRUNCATE of any gateway table, for every role, the
--         superuser included (statement triggers, like the outbox's OW002).
--   GW005 an availability snapshot (or its pointer) that does not describe
--         what it stores (GW-2): the columns (state, state version,
--         evidence, attempt, quadruple) must equal the stored canonical
--         body's fields, read from the body in SQL; the body must name the
--         attempt's slot key, binding and route snapshot, its evidence (of
--         the same attempt, kind and dimension) and its direct predecessor
--         (version - 1 of the same chain, or none at version 1); the chain's
--         pointer must name the same attempt, deployment, kind and dimension.
--   GW006 an attempt-bound availability advance without its event (GW-2):
--         the snapshot (and so the pointer move to it, GW007) needs
--         gateway.evidence-availability.current-changed@1 with the
--         snapshot's event id, aggregate = the chain, revision = the state
--         version, the snapshot's quadruple, created by the same transaction.
--   GW007 a snapshot that is not its chain's head at COMMIT of its own
--         transaction (snapshot and pointer CAS are one advance).
--   GW008 a GatewayAvailabilityCurrentValidationReceipt@1 whose result is
--         not the truth at insert: `current` only for the snapshot the
--         pointer names (read FOR SHARE), `not_current` only with the head's
--         five-tuple; the body equals the columns and the validated snapshot.
--   GW009 a dispatch slot not born `reserved`, or still `reserved` at COMMIT
--         of the transaction that reserved it (GW-1: reserve and advance in
--         one transaction).
--   GW010 a terminal fact that does not describe its slot (GW-1): route
--         snapshot, binding and pre-binding rejection only while the slot is
--         reserved, each body naming the slot key and its own columns (the
--         binding its route snapshot); at COMMIT a `bound` slot has its
--         binding and a `terminal_rejected` slot its rejection, and the
--         stored reply names exactly them.
--
-- Every check is a primary-key or unique-index lookup of one slot, one
-- chain or one event; nothing reads more as history grows.

-- +goose Up
-- +goose StatementBegin

----------------------------------------------------------------------------
-- Dispatch slots (GW-1): born reserved, terminal in the same transaction

CREATE FUNCTION gateway.guard_slot_insert() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF /* guard GW009.slot-born-reserved */ NEW.state <> 'reserved' OR NEW.reply_body IS NOT NULL OR NEW.terminal_at IS NOT NULL THEN
    RAISE EXCEPTION 'gateway: slot % must be inserted reserved (it becomes terminal by the guarded transition)', NEW.execution_attempt_id
      USING ERRCODE = 'GW009';
  END IF;
  RETURN NEW;
END
$fn$;

CREATE TRIGGER dispatch_slots_guard_insert BEFORE INSERT ON gateway.dispatch_slots
  FOR EACH ROW EXECUTE FUNCTION gateway.guard_slot_insert();

CREATE FUNCTION gateway.prove_slot_terminal() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF /* guard GW009.slot-reserved-at-commit */ EXISTS (SELECT 1 FROM gateway.dispatch_slots WHERE execution_attempt_id = NEW.execution_attempt_id AND state = 'reserved') THEN
    RAISE EXCEPTION 'gateway: slot % is still reserved at the end of the transaction that reserved it', NEW.execution_attempt_id
      USING ERRCODE = 'GW009';
  END IF;
  RETURN NULL;
END
$fn$;

CREATE CONSTRAINT TRIGGER dispatch_slots_prove_terminal AFTER INSERT ON gateway.dispatch_slots
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION gateway.prove_slot_terminal();

-- A body names the slot key (attempt, deployment, attempt manifest quadruple).
CREATE FUNCTION gateway.names_slot(j jsonb, s gateway.dispatch_slots) RETURNS boolean
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $fn$
  SELECT jsonb_typeof(j) = 'object' AND
         (j->>'executionAttemptId', j->>'gatewayDeploymentId',
          j->>'attemptExecutionManifestRef', j->>'attemptExecutionManifestSchemaVersion',
          j->>'attemptExecutionManifestDigestAlgorithmVersion', j->>'attemptExecutionManifestDigest')
         IS NOT DISTINCT FROM
         (s.execution_attempt_id::text, s.gateway_deployment_id,
          s.attempt_execution_manifest_ref, s.attempt_execution_manifest_schema_version,
          s.attempt_execution_manifest_digest_algorithm_version, s.attempt_execution_manifest_digest)
$fn$;

CREATE FUNCTION gateway.guard_terminal_fact() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  s gateway.dispatch_slots;
  j jsonb;
  ok boolean;
  rs gateway.route_snapshots;
BEGIN
  SELECT * INTO s FROM gateway.dispatch_slots WHERE execution_attempt_id = NEW.execution_attempt_id;
  IF /* guard GW010.fact-slot-not-reserved */ s.state IS DISTINCT FROM 'reserved' THEN
    RAISE EXCEPTION 'gateway: % for slot % that is % (terminal facts only while the slot is reserved, in its transaction)',
      TG_TABLE_NAME, NEW.execution_attempt_id, coalesce(s.state, 'missing')
      USING ERRCODE = 'GW010';
  END IF;
  CASE TG_TABLE_NAME
  WHEN 'route_snapshots' THEN
    j := NEW.snapshot_body::jsonb;
    ok := (j->>'gatewayRouteSnapshotRef', j->>'gatewayRouteSnapshotSchemaVersion',
           j->>'gatewayRouteSnapshotDigestAlgorithmVersion', j->>'gatewayRouteSnapshotDigest')
          IS NOT DISTINCT FROM
          (NEW.gateway_route_snapshot_ref, NEW.gateway_route_snapshot_schema_version,
           NEW.gateway_route_snapshot_digest_algorithm_version, NEW.gateway_route_snapshot_digest);
  WHEN 'attempt_route_bindings' THEN
    j := NEW.binding_body::jsonb;
    SELECT * INTO rs FROM gateway.route_snapshots WHERE gateway_route_snapshot_ref = NEW.gateway_route_snapshot_ref;
    ok := rs.execution_attempt_id IS NOT DISTINCT FROM NEW.execution_attempt_id AND
          (j->>'attemptRouteBindingRef', j->>'attemptRouteBindingSchemaVersion',
           j->>'attemptRouteBindingDigestAlgorithmVersion', j->>'attemptRouteBindingDigest',
           j->>'gatewayRouteSnapshotRef', j->>'gatewayRouteSnapshotSchemaVersion',
           j->>'gatewayRouteSnapshotDigestAlgorithmVersion', j->>'gatewayRouteSnapshotDigest')
          IS NOT DISTINCT FROM
          (NEW.attempt_route_binding_ref, NEW.attempt_route_binding_schema_version,
           NEW.attempt_route_binding_digest_algorithm_version, NEW.attempt_route_binding_digest,
           rs.gateway_route_snapshot_ref, rs.gateway_route_snapshot_schema_version,
           rs.gateway_route_snapshot_digest_algorithm_version, rs.gateway_route_snapshot_digest);
  ELSE -- pre_binding_rejections
    j := NEW.fact_body::jsonb;
    ok := (j->>'gatewayPreBindingRejectionFactRef', j->>'gatewayPreBindingRejectionFactSchemaVersion',
           j->>'gatewayPreBindingRejectionFactDigestAlgorithmVersion', j->>'gatewayPreBindingRejectionFactDigest',
           j->>'rejectionReasonCode')
          IS NOT DISTINCT FROM
          (NEW.gateway_pre_binding_rejection_fact_ref, NEW.gateway_pre_binding_rejection_fact_schema_version,
           NEW.gateway_pre_binding_rejection_fact_digest_algorithm_version, NEW.gateway_pre_binding_rejection_fact_digest,
           NEW.rejection_reason_code);
  END CASE;
  IF /* guard GW010.fact-content */ NOT ok OR NOT gateway.names_slot(j, s) THEN
    RAISE EXCEPTION 'gateway: % of slot % does not describe its slot or its own columns', TG_TABLE_NAME, NEW.execution_attempt_id
      USING ERRCODE = 'GW010';
  END IF;
  RETURN NEW;
END
$fn$;

CREATE TRIGGER route_snapshots_guard_insert BEFORE INSERT ON gateway.route_snapshots
  FOR EACH ROW EXECUTE FUNCTION gateway.guard_terminal_fact();
CREATE TRIGGER attempt_route_bindings_guard_insert BEFORE INSERT ON gateway.attempt_route_bindings
  FOR EACH ROW EXECUTE FUNCTION gateway.guard_terminal_fact();
CREATE TRIGGER pre_binding_rejections_guard_insert BEFORE INSERT ON gateway.pre_binding_rejections
  FOR EACH ROW EXECUTE FUNCTION gateway.guard_terminal_fact();

-- At COMMIT: a terminal slot has the fact of its state, and its reply names it.
CREATE FUNCTION gateway.prove_slot_state() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  s gateway.dispatch_slots;
  b gateway.attempt_route_bindings;
  r gateway.pre_binding_rejections;
  j jsonb;
  ok boolean;
BEGIN
  SELECT * INTO s FROM gateway.dispatch_slots WHERE execution_attempt_id = NEW.execution_attempt_id;
  j := s.reply_body::jsonb;
  IF s.state = 'bound' THEN
    SELECT * INTO b FROM gateway.attempt_route_bindings WHERE execution_attempt_id = s.execution_attempt_id;
    ok := b.attempt_route_binding_ref IS NOT NULL AND
          (j->>'state', j->>'attemptRouteBindingRef', j->>'attemptRouteBindingDigest', j->>'gatewayRouteSnapshotRef', j->>'gatewayRouteSnapshotDigest')
          IS NOT DISTINCT FROM
          ('bound', b.attempt_route_binding_ref, b.attempt_route_binding_digest, b.gateway_route_snapshot_ref,
           (SELECT gateway_route_snapshot_digest FROM gateway.route_snapshots WHERE gateway_route_snapshot_ref = b.gateway_route_snapshot_ref));
  ELSIF s.state = 'terminal_rejected' THEN
    SELECT * INTO r FROM gateway.pre_binding_rejections WHERE execution_attempt_id = s.execution_attempt_id;
    ok := r.gateway_pre_binding_rejection_fact_ref IS NOT NULL AND
          (j->>'state', j->>'gatewayPreBindingRejectionFactRef', j->>'gatewayPreBindingRejectionFactDigest', j->>'rejectionReasonCode')
          IS NOT DISTINCT FROM
          ('terminal_rejected', r.gateway_pre_binding_rejection_fact_ref, r.gateway_pre_binding_rejection_fact_digest, r.rejection_reason_code);
  ELSE
    ok := false;
  END IF;
  IF /* guard GW010.terminal-without-fact */ NOT ok OR NOT gateway.names_slot(j, s) THEN
    RAISE EXCEPTION 'gateway: slot % is % without its terminal fact, or its reply names another', s.execution_attempt_id, s.state
      USING ERRCODE = 'GW010';
  END IF;
  RETURN NULL;
END
$fn$;

CREATE CONSTRAINT TRIGGER dispatch_slots_prove_state AFTER UPDATE ON gateway.dispatch_slots
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION gateway.prove_slot_state();

----------------------------------------------------------------------------
-- Availability (GW-2): the snapshot describes what it stores

CREATE FUNCTION gateway.guard_snapshot_content() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  j jsonb;
  s gateway.dispatch_slots;
  b gateway.attempt_route_bindings;
  rs gateway.route_snapshots;
  ev gateway.provider_evidence;
  pred gateway.availability_snapshots;
  ok boolean;
BEGIN
  j := NEW.snapshot_body::jsonb;
  SELECT * INTO s FROM gateway.dispatch_slots WHERE execution_attempt_id = NEW.execution_attempt_id;
  SELECT * INTO b FROM gateway.attempt_route_bindings WHERE execution_attempt_id = NEW.execution_attempt_id;
  SELECT * INTO rs FROM gateway.route_snapshots WHERE gateway_route_snapshot_ref = b.gateway_route_snapshot_ref;
  ok := gateway.names_slot(j, s) AND
        (j->>'currentAvailabilityRef', j->>'currentAvailabilitySchemaVersion',
         j->>'currentAvailabilityDigestAlgorithmVersion', j->>'currentAvailabilityDigest',
         j->>'availabilityState', j->>'stateVersion',
         j->>'attemptRouteBindingRef', j->>'attemptRouteBindingSchemaVersion',
         j->>'attemptRouteBindingDigestAlgorithmVersion', j->>'attemptRouteBindingDigest',
         j->>'gatewayRouteSnapshotRef', j->>'gatewayRouteSnapshotSchemaVersion',
         j->>'gatewayRouteSnapshotDigestAlgorithmVersion', j->>'gatewayRouteSnapshotDigest')
        IS NOT DISTINCT FROM
        (NEW.current_availability_ref, NEW.current_availability_schema_version,
         NEW.current_availability_digest_algorithm_version, NEW.current_availability_digest,
         NEW.availability_state, NEW.state_version::text,
         b.attempt_route_binding_ref, b.attempt_route_binding_schema_version,
         b.attempt_route_binding_digest_algorithm_version, b.attempt_route_binding_digest,
         rs.gateway_route_snapshot_ref, rs.gateway_route_snapshot_schema_version,
         rs.gateway_route_snapshot_digest_algorithm_version, rs.gateway_route_snapshot_digest);
  IF ok AND NEW.provider_evidence_ref IS NULL THEN
    ok := j->'availableEvidence' IS NOT DISTINCT FROM '{"state": "none"}'::jsonb;
  ELSIF ok THEN
    SELECT * INTO ev FROM gateway.provider_evidence WHERE provider_evidence_ref = NEW.provider_evidence_ref;
    ok := (ev.execution_attempt_id, ev.provider_evidence_kind, ev.evidence_dimension_key)
          IS NOT DISTINCT FROM (NEW.execution_attempt_id, j->>'providerEvidenceKind', j->>'evidenceDimensionKey')
          AND j->'availableEvidence' IS NOT DISTINCT FROM jsonb_build_object('state', 'present',
            'providerEvidenceRef', ev.provider_evidence_ref, 'providerEvidenceSchemaVersion', ev.provider_evidence_schema_version,
            'providerEvidenceDigestAlgorithmVersion', ev.provider_evidence_digest_algorithm_version,
            'providerEvidenceDigest', ev.provider_evidence_digest);
  END IF;
  IF ok AND NEW.state_version = 1 THEN
    ok := j->'predecessor' IS NOT DISTINCT FROM '{"state": "none"}'::jsonb;
  ELSIF ok THEN
    SELECT * INTO pred FROM gateway.availability_snapshots WHERE chain_id = NEW.chain_id AND state_version = NEW.state_version - 1;
    ok := (pred.snapshot_body::jsonb->>'providerEvidenceKind', pred.snapshot_body::jsonb->>'evidenceDimensionKey',
           pred.execution_attempt_id)
          IS NOT DISTINCT FROM (j->>'providerEvidenceKind', j->>'evidenceDimensionKey', NEW.execution_attempt_id)
          AND j->'predecessor' IS NOT DISTINCT FROM jsonb_build_object('state', 'present',
            'predecessorAvailabilityRef', pred.current_availability_ref,
            'predecessorAvailabilitySchemaVersion', pred.current_availability_schema_version,
            'predecessorAvailabilityDigestAlgorithmVersion', pred.current_availability_digest_algorithm_version,
            'predecessorAvailabilityDigest', pred.current_availability_digest,
            'predecessorStateVersion', pred.state_version);
  END IF;
  IF /* guard GW005.snapshot-content */ NOT ok THEN
    RAISE EXCEPTION 'gateway: availability snapshot % does not describe what it stores (columns, slot, binding, evidence, predecessor)', NEW.current_availability_ref
      USING ERRCODE = 'GW005';
  END IF;
  RETURN NEW;
END
$fn$;

CREATE TRIGGER availability_snapshots_match BEFORE INSERT ON gateway.availability_snapshots
  FOR EACH ROW EXECUTE FUNCTION gateway.guard_snapshot_content();

-- The payload of an event the calling transaction created, with the given
-- type, aggregate and revision (NULL otherwise). SECURITY DEFINER: the
-- producer role may insert events but not read them; the function only ever
-- answers about the caller's own transaction, by primary key.
CREATE FUNCTION gateway.own_event_payload(p_event_id uuid, p_event_type text, p_aggregate_type text,
                                          p_aggregate_id text, p_aggregate_revision bigint) RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
  SELECT e.event_payload FROM outbox.outbox_events e
   WHERE e.event_id = p_event_id AND e.event_type = p_event_type AND e.schema_version = '1'
     AND e.aggregate_type = p_aggregate_type AND e.aggregate_id = p_aggregate_id
     AND e.aggregate_revision = p_aggregate_revision AND e.created_txid = pg_current_xact_id()
$fn$;

-- A snapshot's advance is complete: its event, and it is the head.
CREATE FUNCTION gateway.advance_complete(snap gateway.availability_snapshots) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  p jsonb;
  c gateway.availability_currents;
  j jsonb;
BEGIN
  p := gateway.own_event_payload(snap.event_id, 'gateway.evidence-availability.current-changed@1',
                                 'gateway_evidence_availability_chain', snap.chain_id::text, snap.state_version);
  IF p IS NULL OR (p->>'currentAvailabilityRef', p->>'currentAvailabilityDigest', p->>'currentAvailabilityStateVersion', p->>'executionAttemptId')
                  IS DISTINCT FROM (snap.current_availability_ref, snap.current_availability_digest, snap.state_version::text, snap.execution_attempt_id::text) THEN
    RETURN 'GW006';
  END IF;
  SELECT * INTO c FROM gateway.availability_currents WHERE chain_id = snap.chain_id;
  IF c.current_availability_ref IS DISTINCT FROM snap.current_availability_ref THEN
    RETURN 'GW007';
  END IF;
  j := snap.snapshot_body::jsonb;
  IF (c.execution_attempt_id, c.gateway_deployment_id, c.provider_evidence_kind, c.evidence_dimension_key)
     IS DISTINCT FROM (snap.execution_attempt_id, j->>'gatewayDeploymentId', j->>'providerEvidenceKind', j->>'evidenceDimensionKey') THEN
    RETURN 'GW005';
  END IF;
  RETURN NULL;
END
$fn$;

CREATE FUNCTION gateway.prove_snapshot_advance() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  code text;
BEGIN
  code := gateway.advance_complete(NEW);
  IF code IS NOT NULL THEN
    RAISE EXCEPTION 'gateway: availability snapshot % of chain % is not a complete advance at COMMIT (event in the same transaction, pointer at it, chain identity): %',
      NEW.current_availability_ref, NEW.chain_id, code
      USING ERRCODE = code;
  END IF;
  RETURN NULL;
END
$fn$;

CREATE CONSTRAINT TRIGGER availability_snapshots_prove_advance AFTER INSERT ON gateway.availability_snapshots
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION gateway.prove_snapshot_advance();

-- A pointer move needs no trigger of its own: the pointer advances by one
-- (GW004) to a snapshot of its chain at exactly that version (deferred
-- foreign key), and that snapshot had to be made head, with its event, in
-- its own transaction (GW006, GW007): so every move is in the transaction of
-- its snapshot and its event.

----------------------------------------------------------------------------
-- Validation receipts: `current` only for the head (migration 00004)

CREATE FUNCTION gateway.guard_validation_receipt() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  j jsonb;
  v gateway.availability_snapshots;
  vj jsonb;
  c gateway.availability_currents;
  head gateway.availability_snapshots;
  ok boolean;
BEGIN
  j := NEW.receipt_body::jsonb;
  SELECT * INTO v FROM gateway.availability_snapshots WHERE current_availability_ref = NEW.validated_availability_ref;
  vj := v.snapshot_body::jsonb;
  SELECT * INTO c FROM gateway.availability_currents WHERE chain_id = v.chain_id FOR SHARE;
  SELECT * INTO head FROM gateway.availability_snapshots
   WHERE chain_id = c.chain_id AND state_version = c.current_state_version;
  ok := head.current_availability_ref IS NOT NULL AND jsonb_typeof(j) = 'object' AND
        (j->>'validationOperationId', j->>'purpose',
         j->>'availabilityCurrentValidationReceiptRef', j->>'availabilityCurrentValidationReceiptSchemaVersion',
         j->>'availabilityCurrentValidationReceiptDigestAlgorithmVersion', j->>'availabilityCurrentValidationReceiptDigest',
         j->>'validatedAvailabilityRef', j->>'validatedAvailabilitySchemaVersion',
         j->>'validatedAvailabilityDigestAlgorithmVersion', j->>'validatedAvailabilityDigest', j->>'validatedStateVersion',
         j->>'executionAttemptId', j->>'gatewayDeploymentId', j->>'providerEvidenceKind', j->>'evidenceDimensionKey',
         j->>'attemptExecutionManifestRef', j->>'attemptExecutionManifestDigest',
         j->'result'->>'state')
        IS NOT DISTINCT FROM
        (NEW.validation_operation_id::text, NEW.purpose,
         NEW.receipt_ref, NEW.receipt_schema_version, NEW.receipt_digest_algorithm_version, NEW.receipt_digest,
         v.current_availability_ref, v.current_availability_schema_version,
         v.current_availability_digest_algorithm_version, v.current_availability_digest, v.state_version::text,
         c.execution_attempt_id::text, c.gateway_deployment_id, c.provider_evidence_kind, c.evidence_dimension_key,
         vj->>'attemptExecutionManifestRef', vj->>'attemptExecutionManifestDigest',
         NEW.result_state);
  IF ok AND NEW.result_state = 'current' THEN
    ok := head.current_availability_ref = v.current_availability_ref AND j->'result' = '{"state": "current"}'::jsonb;
  ELSIF ok THEN
    ok := head.current_availability_ref <> v.current_availability_ref AND j->'result' = jsonb_build_object('state', 'not_current',
      'currentAvailabilitySnapshotRef', head.current_availability_ref,
      'currentAvailabilitySnapshotSchemaVersion', head.current_availability_schema_version,
      'currentAvailabilitySnapshotDigestAlgorithmVersion', head.current_availability_digest_algorithm_version,
      'currentAvailabilitySnapshotDigest', head.current_availability_digest,
      'currentStateVersion', head.state_version);
  END IF;
  IF /* guard GW008.receipt-not-truth */ NOT ok THEN
    RAISE EXCEPTION 'gateway: validation receipt % says % but the chain''s head is % (or its body does not describe its row)',
      NEW.validation_operation_id, NEW.result_state, coalesce(head.current_availability_ref, 'missing')
      USING ERRCODE = 'GW008';
  END IF;
  RETURN NEW;
END
$fn$;

CREATE TRIGGER availability_validation_receipts_guard_insert BEFORE INSERT ON gateway.availability_validation_receipts
  FOR EACH ROW EXECUTE FUNCTION gateway.guard_validation_receipt();

----------------------------------------------------------------------------
-- TRUNCATE is refused for every role, the superuser included (GW001).

CREATE FUNCTION gateway.reject_truncate() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  RAISE EXCEPTION 'gateway: TRUNCATE on %.% is forbidden (immutable gateway facts)', TG_TABLE_SCHEMA, TG_TABLE_NAME
    USING ERRCODE = 'GW001';
END
$fn$;

CREATE TRIGGER /* guard GW001.slots-no-truncate */ dispatch_slots_no_truncate BEFORE TRUNCATE ON gateway.dispatch_slots
  FOR EACH STATEMENT EXECUTE FUNCTION gateway.reject_truncate();
CREATE TRIGGER /* guard GW001.route-snapshots-no-truncate */ route_snapshots_no_truncate BEFORE TRUNCATE ON gateway.route_snapshots
  FOR EACH STATEMENT EXECUTE FUNCTION gateway.reject_truncate();
CREATE TRIGGER /* guard GW001.bindings-no-truncate */ attempt_route_bindings_no_truncate BEFORE TRUNCATE ON gateway.attempt_route_bindings
  FOR EACH STATEMENT EXECUTE FUNCTION gateway.reject_truncate();
CREATE TRIGGER /* guard GW001.rejections-no-truncate */ pre_binding_rejections_no_truncate BEFORE TRUNCATE ON gateway.pre_binding_rejections
  FOR EACH STATEMENT EXECUTE FUNCTION gateway.reject_truncate();
CREATE TRIGGER /* guard GW001.provider-evidence-no-truncate */ provider_evidence_no_truncate BEFORE TRUNCATE ON gateway.provider_evidence
  FOR EACH STATEMENT EXECUTE FUNCTION gateway.reject_truncate();
CREATE TRIGGER /* guard GW001.snapshots-no-truncate */ availability_snapshots_no_truncate BEFORE TRUNCATE ON gateway.availability_snapshots
  FOR EACH STATEMENT EXECUTE FUNCTION gateway.reject_truncate();
CREATE TRIGGER /* guard GW001.currents-no-truncate */ availability_currents_no_truncate BEFORE TRUNCATE ON gateway.availability_currents
  FOR EACH STATEMENT EXECUTE FUNCTION gateway.reject_truncate();
CREATE TRIGGER /* guard GW001.receipts-no-truncate */ availability_validation_receipts_no_truncate BEFORE TRUNCATE ON gateway.availability_validation_receipts
  FOR EACH STATEMENT EXECUTE FUNCTION gateway.reject_truncate();

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA gateway FROM PUBLIC;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA gateway TO oceanway_gateway;
-- +goose StatementEnd

-- +goose Down
-- forward-only
