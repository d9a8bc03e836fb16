-- GatewayEvidenceConflictFact@1 (issue 32): the Gateway owner's durable
-- conflict about one stored provider evidence (the provider sent the same
-- report id again with another quantity). readGatewayProviderEvidence
-- answers conflicting with this fact's quadruple, so the Metering Work that
-- reads the evidence records Blocked@1 (gateway_usage_owner_conflict) and
-- its lane is blocked_on_owner_conflict until a successor availability
-- cites other evidence (the provider's corrected report).
--
--   GW001 (extended) the fact is insert-only: UPDATE, DELETE and TRUNCATE
--         are refused for every role, the superuser included.
--   GW011 a forged fact: its columns must equal its canonical body, the
--         body must name exactly the stored evidence it contests (quadruple,
--         attempt, deployment, binding, kind, dimension, report id), and the
--         conflicting quantity must differ from the evidence's quantity.
-- One fact per evidence (unique provider_evidence_ref): insert-or-compare.

-- +goose Up
-- +goose StatementBegin
CREATE TABLE gateway.evidence_conflict_facts (
  gateway_evidence_conflict_fact_ref                      text        NOT NULL PRIMARY KEY,
  gateway_evidence_conflict_fact_schema_version           text        NOT NULL CHECK (gateway_evidence_conflict_fact_schema_version = '1'),
  gateway_evidence_conflict_fact_digest_algorithm_version text        NOT NULL CHECK (gateway_evidence_conflict_fact_digest_algorithm_version = 'jcs-sha256-v1'),
  gateway_evidence_conflict_fact_digest                   text        NOT NULL CHECK (gateway_evidence_conflict_fact_digest ~ '^[0-9a-f]{64}$'),
  provider_evidence_ref                                   text        NOT NULL UNIQUE REFERENCES gateway.provider_evidence,
  execution_attempt_id                                    uuid        NOT NULL,
  fact_body                                               text        NOT NULL,
  detected_at                                             timestamptz NOT NULL
);

CREATE FUNCTION gateway.guard_evidence_conflict_fact() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  j jsonb;
  e gateway.provider_evidence;
  ej jsonb;
BEGIN
  j := NEW.fact_body::jsonb;
  SELECT * INTO e FROM gateway.provider_evidence WHERE provider_evidence_ref = NEW.provider_evidence_ref;
  ej := e.evidence_body::jsonb;
  IF /* guard GW011.conflict-fact-forged */ jsonb_typeof(j) IS DISTINCT FROM 'object' OR
     (j->>'gatewayEvidenceConflictFactRef', j->>'gatewayEvidenceConflictFactSchemaVersion',
      j->>'gatewayEvidenceConflictFactDigestAlgorithmVersion', j->>'gatewayEvidenceConflictFactDigest', j->>'executionAttemptId')
     IS DISTINCT FROM
     (NEW.gateway_evidence_conflict_fact_ref, NEW.gateway_evidence_conflict_fact_schema_version,
      NEW.gateway_evidence_conflict_fact_digest_algorithm_version, NEW.gateway_evidence_conflict_fact_digest, NEW.execution_attempt_id::text) OR
     (j->>'providerEvidenceRef', j->>'providerEvidenceSchemaVersion', j->>'providerEvidenceDigestAlgorithmVersion', j->>'providerEvidenceDigest',
      j->>'executionAttemptId', j->>'gatewayDeploymentId', j->>'attemptRouteBindingRef', j->>'attemptRouteBindingDigest',
      j->>'providerEvidenceKind', j->>'evidenceDimensionKey', j->>'providerReportId')
     IS DISTINCT FROM
     (e.provider_evidence_ref, e.provider_evidence_schema_version, e.provider_evidence_digest_algorithm_version, e.provider_evidence_digest,
      ej->>'executionAttemptId', ej->>'gatewayDeploymentId', ej->>'attemptRouteBindingRef', ej->>'attemptRouteBindingDigest',
      ej->>'providerEvidenceKind', ej->>'evidenceDimensionKey', ej->>'providerReportId') THEN
    RAISE EXCEPTION 'gateway: evidence conflict fact % does not describe what it stores or the evidence % it contests',
      NEW.gateway_evidence_conflict_fact_ref, NEW.provider_evidence_ref
      USING ERRCODE = 'GW011';
  END IF;
  IF /* guard GW011.conflict-quantity-agrees */ j->>'conflictingQuantity' IS NOT DISTINCT FROM ej->>'quantity' THEN
    RAISE EXCEPTION 'gateway: evidence conflict fact % reports the evidence''s own quantity (no conflict)', NEW.gateway_evidence_conflict_fact_ref
      USING ERRCODE = 'GW011';
  END IF;
  RETURN NEW;
END
$fn$;

CREATE TRIGGER evidence_conflict_facts_guard_insert BEFORE INSERT ON gateway.evidence_conflict_facts
  FOR EACH ROW EXECUTE FUNCTION gateway.guard_evidence_conflict_fact();
CREATE TRIGGER /* guard GW001.evidence-conflict-insert-only */ evidence_conflict_facts_insert_only
  BEFORE UPDATE OR DELETE ON gateway.evidence_conflict_facts
  FOR EACH ROW EXECUTE FUNCTION gateway.reject_change();
CREATE TRIGGER /* guard GW001.evidence-conflict-no-truncate */ evidence_conflict_facts_no_truncate
  BEFORE TRUNCATE ON gateway.evidence_conflict_facts
  FOR EACH STATEMENT EXECUTE FUNCTION gateway.reject_truncate();

REVOKE ALL ON gateway.evidence_conflict_facts FROM PUBLIC;
REVOKE ALL ON FUNCTION gateway.guard_evidence_conflict_fact() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gateway.guard_evidence_conflict_fact() TO oceanway_gateway;
GRANT SELECT, INSERT ON gateway.evidence_conflict_facts TO oceanway_gateway;
-- +goose StatementEnd

-- +goose Down
-- forward-only
