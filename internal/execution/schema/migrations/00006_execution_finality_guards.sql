-- Finality guards of the Execution owner (issue 30): PostgreSQL itself
-- refuses forged Execution writes, even as oceanway_execution, with stable
-- SQLSTATEs (docs/execution-gateway.md lists them with the rule each guards).
--
--   EX001 (extended) TRUNCATE of any execution table, for every role, the
--         superuser included (statement triggers, like the outbox's OW002).
--   EX005 closure outside the closure CAS (EX-2): RunAttemptSetManifest@1 is
--         inserted only while the run accepts attempts and only with the run
--         at attempts_closed at COMMIT of the same transaction;
--         RunExecutionFinalizationFact@1 only for a run at attempts_closed.
--         So the set, the CAS and the fact are one transaction; no set or
--         fact for a run that still accepts attempts.
--   EX006 closure facts that do not describe the closure: the set's body
--         must carry its own quadruple, the run's identities and exactly the
--         run's attempts with their eligibility facts in (runStepId,
--         executionAttemptId) order; the finalization fact must carry the
--         set's quadruple, the same attempts, the run's token and its
--         columns (checked at COMMIT, after the CAS).
--   EX007 AttemptNotDispatchedFact@1 (GW-1) that does not describe its
--         attempt or names no stored Gateway evidence: the fact needs the
--         Gateway's GatewayPreBindingRejectionFact@1 body as Execution
--         received it from readDispatchSlot@1 (table
--         gateway_rejection_evidence, slot terminal_rejected); the fact's
--         rejection quadruple and reason must equal that evidence, and the
--         evidence must name the attempt's slot key (attempt, gateway
--         deployment, attempt manifest quadruple).
--   EX008 a not-dispatched fact (or its evidence) without the attempt's
--         not_dispatched ExecutionEligibilityFact@1 naming it at COMMIT: no
--         not-dispatched fact for an attempt that is (or becomes)
--         dispatched, no free-standing fact.
--   EX009 ExecutionEligibilityFact@1 whose body does not describe its row,
--         attempt and run (disposition, not-dispatched quadruple, attempt
--         and run manifests, account, reservation, run of the attempt).
--   EX010 a fact without its event in the same transaction: an
--         eligibility fact needs its execution.attempt-eligibility.finalized@1
--         (aggregate = the attempt, revision 1) and a finalization fact its
--         execution.run-finalization.closed@1 (aggregate = the run), each
--         created by the same transaction and carrying the fact's quadruple.
--
-- Every check is a primary-key or unique-index lookup of the rows of one
-- attempt or one run; nothing reads more as history grows.
--
-- What stays trust in the Go owner read: the execution database cannot see
-- the Gateway's slot. It proves that a not-dispatched fact agrees with the
-- evidence Execution stored and that the evidence names the attempt's own
-- slot key, but not that the Gateway really answered terminal_rejected: a
-- role that can insert both the evidence and the fact of an attempt that
-- has no eligibility yet can still forge a consistent pair. That last step
-- is ExecutionService.FinalizeEligibility's readDispatchSlot@1 call.

-- +goose Up
-- +goose StatementBegin

----------------------------------------------------------------------------
-- Gateway evidence of a not-dispatched attempt (GW-1)

CREATE TABLE execution.gateway_rejection_evidence (
  execution_attempt_id                             uuid        NOT NULL PRIMARY KEY REFERENCES execution.attempts,
  read_contract_version                            text        NOT NULL CHECK (read_contract_version = 'readDispatchSlot@1'),
  slot_state                                       text        NOT NULL CHECK (slot_state = 'terminal_rejected'),
  gateway_pre_binding_rejection_fact_ref           text        NOT NULL UNIQUE,
  gateway_pre_binding_rejection_fact_schema_version text       NOT NULL CHECK (gateway_pre_binding_rejection_fact_schema_version = '1'),
  gateway_pre_binding_rejection_fact_digest_algorithm_version text NOT NULL CHECK (gateway_pre_binding_rejection_fact_digest_algorithm_version = 'jcs-sha256-v1'),
  gateway_pre_binding_rejection_fact_digest        text        NOT NULL CHECK (gateway_pre_binding_rejection_fact_digest ~ '^[0-9a-f]{64}$'),
  rejection_reason_code                            text        NOT NULL CHECK (rejection_reason_code <> ''),
  -- the Gateway's canonical GatewayPreBindingRejectionFact@1 bytes as read
  rejection_fact_body                              text        NOT NULL,
  received_at                                      timestamptz NOT NULL
);

COMMENT ON TABLE execution.gateway_rejection_evidence IS
  'The Gateway''s GatewayPreBindingRejectionFact@1 as readDispatchSlot@1 answered it (terminal_rejected), stored with the attempt''s AttemptNotDispatchedFact@1.';

CREATE TRIGGER /* guard EX001.rejection-evidence-immutable */ gateway_rejection_evidence_immutable
  BEFORE UPDATE OR DELETE ON execution.gateway_rejection_evidence
  FOR EACH ROW EXECUTE FUNCTION execution.reject_change();

-- The run of an attempt, share-locked (the closure's FOR UPDATE excludes it),
-- must accept attempts (EX003).
CREATE FUNCTION execution.lock_accepting_run_of(attempt uuid) RETURNS execution.attempts
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  a execution.attempts;
  s text;
BEGIN
  SELECT * INTO a FROM execution.attempts WHERE execution_attempt_id = attempt;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  SELECT state INTO s FROM execution.run_execution_states WHERE run_id = a.run_id FOR SHARE;
  IF /* guard EX003.evidence-run-not-accepting */ s IS DISTINCT FROM 'accepting_attempts' THEN
    RAISE EXCEPTION 'execution: run % is not accepting attempts (state %)', a.run_id, coalesce(s, 'missing')
      USING ERRCODE = 'EX003';
  END IF;
  RETURN a;
END
$fn$;

CREATE FUNCTION execution.guard_rejection_evidence() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  a execution.attempts;
  j jsonb;
BEGIN
  a := execution.lock_accepting_run_of(NEW.execution_attempt_id);
  j := NEW.rejection_fact_body::jsonb;
  IF /* guard EX007.evidence-names-slot */ a.execution_attempt_id IS NULL OR jsonb_typeof(j) <> 'object' OR
     (j->>'executionAttemptId', j->>'gatewayDeploymentId',
      j->>'attemptExecutionManifestRef', j->>'attemptExecutionManifestSchemaVersion',
      j->>'attemptExecutionManifestDigestAlgorithmVersion', j->>'attemptExecutionManifestDigest',
      j->>'gatewayPreBindingRejectionFactRef', j->>'gatewayPreBindingRejectionFactSchemaVersion',
      j->>'gatewayPreBindingRejectionFactDigestAlgorithmVersion', j->>'gatewayPreBindingRejectionFactDigest',
      j->>'rejectionReasonCode')
     IS DISTINCT FROM
     (a.execution_attempt_id::text, a.gateway_deployment_id,
      a.attempt_execution_manifest_ref, a.attempt_execution_manifest_schema_version,
      a.attempt_execution_manifest_digest_algorithm_version, a.attempt_execution_manifest_digest,
      NEW.gateway_pre_binding_rejection_fact_ref, NEW.gateway_pre_binding_rejection_fact_schema_version,
      NEW.gateway_pre_binding_rejection_fact_digest_algorithm_version, NEW.gateway_pre_binding_rejection_fact_digest,
      NEW.rejection_reason_code) THEN
    RAISE EXCEPTION 'execution: gateway rejection evidence of attempt % does not name the attempt''s slot or its own columns', NEW.execution_attempt_id
      USING ERRCODE = 'EX007';
  END IF;
  RETURN NEW;
END
$fn$;

CREATE TRIGGER gateway_rejection_evidence_guard_insert
  BEFORE INSERT ON execution.gateway_rejection_evidence
  FOR EACH ROW EXECUTE FUNCTION execution.guard_rejection_evidence();

----------------------------------------------------------------------------
-- AttemptNotDispatchedFact@1 (GW-1): describes its attempt and the stored evidence

CREATE FUNCTION execution.guard_not_dispatched() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  a execution.attempts;
  ev execution.gateway_rejection_evidence;
  j jsonb;
BEGIN
  a := execution.lock_accepting_run_of(NEW.execution_attempt_id);
  SELECT * INTO ev FROM execution.gateway_rejection_evidence WHERE execution_attempt_id = NEW.execution_attempt_id;
  IF /* guard EX007.fact-without-evidence */ NOT FOUND THEN
    RAISE EXCEPTION 'execution: not-dispatched fact of attempt % names no stored Gateway rejection evidence', NEW.execution_attempt_id
      USING ERRCODE = 'EX007';
  END IF;
  j := NEW.fact_body::jsonb;
  IF /* guard EX007.fact-differs-from-evidence */ a.execution_attempt_id IS NULL OR jsonb_typeof(j) <> 'object' OR
     (j->>'executionAttemptId', j->>'runId', j->>'runStepId', j->>'gatewayDeploymentId',
      j->>'attemptExecutionManifestRef', j->>'attemptExecutionManifestSchemaVersion',
      j->>'attemptExecutionManifestDigestAlgorithmVersion', j->>'attemptExecutionManifestDigest',
      j->>'attemptNotDispatchedFactRef', j->>'attemptNotDispatchedFactSchemaVersion',
      j->>'attemptNotDispatchedFactDigestAlgorithmVersion', j->>'attemptNotDispatchedFactDigest',
      j->>'gatewayPreBindingRejectionFactRef', j->>'gatewayPreBindingRejectionFactSchemaVersion',
      j->>'gatewayPreBindingRejectionFactDigestAlgorithmVersion', j->>'gatewayPreBindingRejectionFactDigest',
      j->>'rejectionReasonCode', NEW.gateway_pre_binding_rejection_fact_ref)
     IS DISTINCT FROM
     (a.execution_attempt_id::text, a.run_id::text, a.run_step_id::text, a.gateway_deployment_id,
      a.attempt_execution_manifest_ref, a.attempt_execution_manifest_schema_version,
      a.attempt_execution_manifest_digest_algorithm_version, a.attempt_execution_manifest_digest,
      NEW.attempt_not_dispatched_fact_ref, NEW.attempt_not_dispatched_fact_schema_version,
      NEW.attempt_not_dispatched_fact_digest_algorithm_version, NEW.attempt_not_dispatched_fact_digest,
      ev.gateway_pre_binding_rejection_fact_ref, ev.gateway_pre_binding_rejection_fact_schema_version,
      ev.gateway_pre_binding_rejection_fact_digest_algorithm_version, ev.gateway_pre_binding_rejection_fact_digest,
      ev.rejection_reason_code, ev.gateway_pre_binding_rejection_fact_ref) THEN
    RAISE EXCEPTION 'execution: not-dispatched fact of attempt % does not describe its attempt or its stored Gateway rejection evidence', NEW.execution_attempt_id
      USING ERRCODE = 'EX007';
  END IF;
  RETURN NEW;
END
$fn$;

CREATE TRIGGER attempt_not_dispatched_facts_guard_insert
  BEFORE INSERT ON execution.attempt_not_dispatched_facts
  FOR EACH ROW EXECUTE FUNCTION execution.guard_not_dispatched();

-- At COMMIT the attempt's eligibility fact is not_dispatched and names it.
CREATE FUNCTION execution.prove_not_dispatched() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF /* guard EX008.without-not-dispatched-eligibility */ NOT EXISTS (SELECT 1 FROM execution.eligibility_facts
                  WHERE execution_attempt_id = NEW.execution_attempt_id
                    AND dispatch_disposition = 'not_dispatched'
                    AND not_dispatched_execution_attempt_id = NEW.execution_attempt_id) THEN
    RAISE EXCEPTION 'execution: % of attempt % without its not_dispatched eligibility fact', TG_TABLE_NAME, NEW.execution_attempt_id
      USING ERRCODE = 'EX008';
  END IF;
  RETURN NULL;
END
$fn$;

CREATE CONSTRAINT TRIGGER attempt_not_dispatched_facts_prove_eligibility
  AFTER INSERT ON execution.attempt_not_dispatched_facts
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION execution.prove_not_dispatched();
CREATE CONSTRAINT TRIGGER gateway_rejection_evidence_prove_eligibility
  AFTER INSERT ON execution.gateway_rejection_evidence
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION execution.prove_not_dispatched();

----------------------------------------------------------------------------
-- ExecutionEligibilityFact@1 (EX-3): describes its row, attempt and run

CREATE FUNCTION execution.guard_eligibility_content() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  a execution.attempts;
  r execution.run_execution_states;
  nd execution.attempt_not_dispatched_facts;
  j jsonb;
  d jsonb;
BEGIN
  SELECT * INTO a FROM execution.attempts WHERE execution_attempt_id = NEW.execution_attempt_id;
  SELECT * INTO r FROM execution.run_execution_states WHERE run_id = a.run_id;
  j := NEW.fact_body::jsonb;
  d := j->'disposition';
  IF NEW.dispatch_disposition = 'not_dispatched' THEN
    SELECT * INTO nd FROM execution.attempt_not_dispatched_facts WHERE execution_attempt_id = NEW.execution_attempt_id;
  END IF;
  IF /* guard EX009.eligibility-content */ a.execution_attempt_id IS NULL OR NEW.run_id IS DISTINCT FROM a.run_id OR jsonb_typeof(j) <> 'object' OR
     (j->>'executionEligibilityFactRef', j->>'executionEligibilityFactSchemaVersion',
      j->>'executionEligibilityFactDigestAlgorithmVersion', j->>'executionEligibilityFactDigest',
      j->>'executionAttemptId', j->>'runId', j->>'runStepId',
      j->>'attemptExecutionManifestRef', j->>'attemptExecutionManifestSchemaVersion',
      j->>'attemptExecutionManifestDigestAlgorithmVersion', j->>'attemptExecutionManifestDigest',
      j->>'runAdmissionManifestRef', j->>'runAdmissionManifestSchemaVersion',
      j->>'runAdmissionManifestDigestAlgorithmVersion', j->>'runAdmissionManifestDigest',
      j->>'billingAccountId', j->>'billingReservationId')
     IS DISTINCT FROM
     (NEW.execution_eligibility_fact_ref, NEW.execution_eligibility_fact_schema_version,
      NEW.execution_eligibility_fact_digest_algorithm_version, NEW.execution_eligibility_fact_digest,
      a.execution_attempt_id::text, a.run_id::text, a.run_step_id::text,
      a.attempt_execution_manifest_ref, a.attempt_execution_manifest_schema_version,
      a.attempt_execution_manifest_digest_algorithm_version, a.attempt_execution_manifest_digest,
      r.run_admission_manifest_ref, r.run_admission_manifest_schema_version,
      r.run_admission_manifest_digest_algorithm_version, r.run_admission_manifest_digest,
      r.billing_account_id::text, r.billing_reservation_id::text)
     OR (NEW.dispatch_disposition = 'dispatched' AND d IS DISTINCT FROM jsonb_build_object('dispatchDisposition', 'dispatched'))
     OR (NEW.dispatch_disposition = 'not_dispatched' AND d IS DISTINCT FROM jsonb_build_object(
           'dispatchDisposition', 'not_dispatched',
           'attemptNotDispatchedFactRef', nd.attempt_not_dispatched_fact_ref,
           'attemptNotDispatchedFactSchemaVersion', nd.attempt_not_dispatched_fact_schema_version,
           'attemptNotDispatchedFactDigestAlgorithmVersion', nd.attempt_not_dispatched_fact_digest_algorithm_version,
           'attemptNotDispatchedFactDigest', nd.attempt_not_dispatched_fact_digest)) THEN
    RAISE EXCEPTION 'execution: eligibility fact of attempt % does not describe its row, attempt or run', NEW.execution_attempt_id
      USING ERRCODE = 'EX009';
  END IF;
  RETURN NEW;
END
$fn$;

CREATE TRIGGER eligibility_facts_match
  BEFORE INSERT ON execution.eligibility_facts
  FOR EACH ROW EXECUTE FUNCTION execution.guard_eligibility_content();

-- The payload of an event the calling transaction created, with the given
-- type, aggregate and revision (NULL otherwise). SECURITY DEFINER: the
-- producer role may insert events but not read them; the function only ever
-- answers about the caller's own transaction, by primary key.
CREATE FUNCTION execution.own_event_payload(p_event_id uuid, p_event_type text, p_aggregate_type text,
                                            p_aggregate_id text, p_aggregate_revision bigint) RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
  SELECT e.event_payload FROM outbox.outbox_events e
   WHERE e.event_id = p_event_id AND e.event_type = p_event_type AND e.schema_version = '1'
     AND e.aggregate_type = p_aggregate_type AND e.aggregate_id = p_aggregate_id
     AND e.aggregate_revision = p_aggregate_revision AND e.created_txid = pg_current_xact_id()
$fn$;

-- At COMMIT: the eligibility fact's event, created by the same transaction.
CREATE FUNCTION execution.prove_eligibility_event() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  p jsonb;
BEGIN
  p := execution.own_event_payload(NEW.event_id, 'execution.attempt-eligibility.finalized@1', 'execution_attempt',
                                   NEW.execution_attempt_id::text, 1);
  IF /* guard EX010.eligibility-without-event */ p IS NULL OR (p->>'executionEligibilityFactRef', p->>'executionEligibilityFactDigest')
                  IS DISTINCT FROM (NEW.execution_eligibility_fact_ref, NEW.execution_eligibility_fact_digest) THEN
    RAISE EXCEPTION 'execution: eligibility fact of attempt % without its execution.attempt-eligibility.finalized@1 in the same transaction', NEW.execution_attempt_id
      USING ERRCODE = 'EX010';
  END IF;
  RETURN NULL;
END
$fn$;

CREATE CONSTRAINT TRIGGER eligibility_facts_prove_event
  AFTER INSERT ON execution.eligibility_facts
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION execution.prove_eligibility_event();

----------------------------------------------------------------------------
-- Closure (EX-2): set, CAS and fact in one transaction, each describing the closure

CREATE FUNCTION execution.guard_closure_insert() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  s text;
  want text;
BEGIN
  want := CASE TG_TABLE_NAME WHEN 'attempt_set_manifests' THEN 'accepting_attempts' ELSE 'attempts_closed' END;
  SELECT state INTO s FROM execution.run_execution_states WHERE run_id = NEW.run_id;
  IF /* guard EX005.closure-insert-state */ s IS DISTINCT FROM want THEN
    RAISE EXCEPTION 'execution: % of run % written while the run is % (the closure writes the set, CASes accepting_attempts → attempts_closed and writes the fact in one transaction)',
      TG_TABLE_NAME, NEW.run_id, coalesce(s, 'missing')
      USING ERRCODE = 'EX005';
  END IF;
  RETURN NEW;
END
$fn$;

CREATE TRIGGER attempt_set_manifests_guard_insert
  BEFORE INSERT ON execution.attempt_set_manifests
  FOR EACH ROW EXECUTE FUNCTION execution.guard_closure_insert();
CREATE TRIGGER run_finalizations_guard_insert
  BEFORE INSERT ON execution.run_finalizations
  FOR EACH ROW EXECUTE FUNCTION execution.guard_closure_insert();

-- The attempt set's items as the run's rows say they are, in the set's order.
CREATE FUNCTION execution.closure_items(run uuid) RETURNS jsonb
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $fn$
  SELECT coalesce(jsonb_agg(jsonb_build_object(
           'runStepId', a.run_step_id::text, 'executionAttemptId', a.execution_attempt_id::text,
           'attemptExecutionManifestRef', a.attempt_execution_manifest_ref,
           'attemptExecutionManifestSchemaVersion', a.attempt_execution_manifest_schema_version,
           'attemptExecutionManifestDigestAlgorithmVersion', a.attempt_execution_manifest_digest_algorithm_version,
           'attemptExecutionManifestDigest', a.attempt_execution_manifest_digest,
           'executionEligibilityFactRef', e.execution_eligibility_fact_ref,
           'executionEligibilityFactSchemaVersion', e.execution_eligibility_fact_schema_version,
           'executionEligibilityFactDigestAlgorithmVersion', e.execution_eligibility_fact_digest_algorithm_version,
           'executionEligibilityFactDigest', e.execution_eligibility_fact_digest,
           'dispatchDisposition', e.dispatch_disposition)
           ORDER BY a.run_step_id::text COLLATE "C", a.execution_attempt_id::text COLLATE "C"), '[]'::jsonb)
    FROM execution.attempts a
    LEFT JOIN execution.eligibility_facts e ON e.execution_attempt_id = a.execution_attempt_id
   WHERE a.run_id = run
$fn$;

-- The run-closure identity every closure object carries (RunClosure).
CREATE FUNCTION execution.closure_identity_matches(j jsonb, r execution.run_execution_states) RETURNS boolean
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $fn$
  SELECT (j->>'runId', j->>'tenantKind', j->>'tenantId', j->>'workspaceId', j->>'projectId',
          j->>'billingAccountId', j->>'billingReservationId',
          j->>'runAdmissionManifestRef', j->>'runAdmissionManifestSchemaVersion',
          j->>'runAdmissionManifestDigestAlgorithmVersion', j->>'runAdmissionManifestDigest')
         IS NOT DISTINCT FROM
         (r.run_id::text, r.tenant_kind, r.tenant_id::text, r.workspace_id::text, r.project_id::text,
          r.billing_account_id::text, r.billing_reservation_id::text,
          r.run_admission_manifest_ref, r.run_admission_manifest_schema_version,
          r.run_admission_manifest_digest_algorithm_version, r.run_admission_manifest_digest)
$fn$;

-- At COMMIT: the run is closed, and the set describes exactly its attempts.
CREATE FUNCTION execution.prove_attempt_set() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  r execution.run_execution_states;
  j jsonb;
BEGIN
  SELECT * INTO r FROM execution.run_execution_states WHERE run_id = NEW.run_id;
  IF /* guard EX005.set-without-cas */ r.state IS DISTINCT FROM 'attempts_closed' THEN
    RAISE EXCEPTION 'execution: attempt set of run % committed while the run is % (no closure CAS in its transaction)', NEW.run_id, coalesce(r.state, 'missing')
      USING ERRCODE = 'EX005';
  END IF;
  j := NEW.manifest_body::jsonb;
  IF /* guard EX006.set-content */ jsonb_typeof(j) <> 'object' OR NOT execution.closure_identity_matches(j, r) OR
     (j->>'attemptSetManifestRef', j->>'attemptSetManifestSchemaVersion',
      j->>'attemptSetManifestDigestAlgorithmVersion', j->>'attemptSetManifestDigest', j->>'attemptCount')
     IS DISTINCT FROM
     (NEW.attempt_set_manifest_ref, NEW.attempt_set_manifest_schema_version,
      NEW.attempt_set_manifest_digest_algorithm_version, NEW.attempt_set_manifest_digest, NEW.attempt_count::text)
     OR j->'attempts' IS DISTINCT FROM execution.closure_items(NEW.run_id) THEN
    RAISE EXCEPTION 'execution: attempt set of run % does not describe the run''s attempts and eligibility facts', NEW.run_id
      USING ERRCODE = 'EX006';
  END IF;
  RETURN NULL;
END
$fn$;

CREATE CONSTRAINT TRIGGER attempt_set_manifests_prove_closure
  AFTER INSERT ON execution.attempt_set_manifests
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION execution.prove_attempt_set();

-- At COMMIT: the fact describes the closure (set, attempts, token, columns)
-- and its closure event was created by the same transaction.
CREATE FUNCTION execution.prove_finalization() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  r execution.run_execution_states;
  s execution.attempt_set_manifests;
  j jsonb;
  p jsonb;
BEGIN
  SELECT * INTO r FROM execution.run_execution_states WHERE run_id = NEW.run_id;
  SELECT * INTO s FROM execution.attempt_set_manifests WHERE run_id = NEW.run_id;
  IF /* guard EX005.fact-run-not-closed */ r.state IS DISTINCT FROM 'attempts_closed' THEN
    RAISE EXCEPTION 'execution: finalization fact of run % committed while the run is %', NEW.run_id, coalesce(r.state, 'missing')
      USING ERRCODE = 'EX005';
  END IF;
  j := NEW.fact_body::jsonb;
  IF /* guard EX006.fact-content */ jsonb_typeof(j) <> 'object' OR NOT execution.closure_identity_matches(j, r) OR
     (j->>'runExecutionFinalizationRef', j->>'runExecutionFinalizationSchemaVersion',
      j->>'runExecutionFinalizationDigestAlgorithmVersion', j->>'runExecutionFinalizationDigest',
      j->>'runExecutionFinalizationStateVersion', j->>'closureOperationId', j->>'attemptCount',
      j->>'attemptSetManifestRef', j->>'attemptSetManifestSchemaVersion',
      j->>'attemptSetManifestDigestAlgorithmVersion', j->>'attemptSetManifestDigest',
      j->>'runExecutionTokenRef', j->>'runExecutionTokenSchemaVersion',
      j->>'runExecutionTokenDigestAlgorithmVersion', j->>'runExecutionTokenDigest')
     IS DISTINCT FROM
     (NEW.run_execution_finalization_ref, NEW.run_execution_finalization_schema_version,
      NEW.run_execution_finalization_digest_algorithm_version, NEW.run_execution_finalization_digest,
      NEW.run_execution_finalization_state_version::text, NEW.closure_operation_id::text, NEW.attempt_count::text,
      s.attempt_set_manifest_ref, s.attempt_set_manifest_schema_version,
      s.attempt_set_manifest_digest_algorithm_version, s.attempt_set_manifest_digest,
      r.run_execution_token_ref, r.run_execution_token_schema_version,
      r.run_execution_token_digest_algorithm_version, r.run_execution_token_digest)
     OR NEW.attempt_count IS DISTINCT FROM s.attempt_count
     OR NEW.run_execution_finalization_state_version IS DISTINCT FROM r.state_version
     OR j->'attempts' IS DISTINCT FROM s.manifest_body::jsonb->'attempts' THEN
    RAISE EXCEPTION 'execution: finalization fact of run % does not describe its closure (set, attempts, token, columns)', NEW.run_id
      USING ERRCODE = 'EX006';
  END IF;
  p := execution.own_event_payload(NEW.event_id, 'execution.run-finalization.closed@1', 'run', NEW.run_id::text, 1);
  IF /* guard EX010.fact-without-event */ p IS NULL OR (p->>'runExecutionFinalizationRef', p->>'runExecutionFinalizationDigest', p->>'attemptSetManifestDigest')
                  IS DISTINCT FROM (NEW.run_execution_finalization_ref, NEW.run_execution_finalization_digest, s.attempt_set_manifest_digest) THEN
    RAISE EXCEPTION 'execution: finalization fact of run % without its execution.run-finalization.closed@1 in the same transaction', NEW.run_id
      USING ERRCODE = 'EX010';
  END IF;
  RETURN NULL;
END
$fn$;

CREATE CONSTRAINT TRIGGER run_finalizations_prove_closure
  AFTER INSERT ON execution.run_finalizations
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION execution.prove_finalization();

----------------------------------------------------------------------------
-- TRUNCATE is refused for every role, the superuser included (EX001).

CREATE FUNCTION execution.reject_truncate() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  RAISE EXCEPTION 'execution: TRUNCATE on %.% is forbidden (immutable execution facts)', TG_TABLE_SCHEMA, TG_TABLE_NAME
    USING ERRCODE = 'EX001';
END
$fn$;

CREATE TRIGGER /* guard EX001.run-states-no-truncate */ run_execution_states_no_truncate BEFORE TRUNCATE ON execution.run_execution_states
  FOR EACH STATEMENT EXECUTE FUNCTION execution.reject_truncate();
CREATE TRIGGER /* guard EX001.attempts-no-truncate */ attempts_no_truncate BEFORE TRUNCATE ON execution.attempts
  FOR EACH STATEMENT EXECUTE FUNCTION execution.reject_truncate();
CREATE TRIGGER /* guard EX001.rejection-evidence-no-truncate */ gateway_rejection_evidence_no_truncate BEFORE TRUNCATE ON execution.gateway_rejection_evidence
  FOR EACH STATEMENT EXECUTE FUNCTION execution.reject_truncate();
CREATE TRIGGER /* guard EX001.not-dispatched-facts-no-truncate */ attempt_not_dispatched_facts_no_truncate BEFORE TRUNCATE ON execution.attempt_not_dispatched_facts
  FOR EACH STATEMENT EXECUTE FUNCTION execution.reject_truncate();
CREATE TRIGGER /* guard EX001.eligibility-facts-no-truncate */ eligibility_facts_no_truncate BEFORE TRUNCATE ON execution.eligibility_facts
  FOR EACH STATEMENT EXECUTE FUNCTION execution.reject_truncate();
CREATE TRIGGER /* guard EX001.attempt-sets-no-truncate */ attempt_set_manifests_no_truncate BEFORE TRUNCATE ON execution.attempt_set_manifests
  FOR EACH STATEMENT EXECUTE FUNCTION execution.reject_truncate();
CREATE TRIGGER /* guard EX001.finalizations-no-truncate */ run_finalizations_no_truncate BEFORE TRUNCATE ON execution.run_finalizations
  FOR EACH STATEMENT EXECUTE FUNCTION execution.reject_truncate();

REVOKE ALL ON execution.gateway_rejection_evidence FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA execution FROM PUBLIC;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA execution TO oceanway_execution;
GRANT SELECT, INSERT ON execution.gateway_rejection_evidence TO oceanway_execution;
-- +goose StatementEnd

-- +goose Down
-- forward-only
