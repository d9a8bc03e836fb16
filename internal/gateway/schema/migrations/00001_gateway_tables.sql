-- Gateway owner (schema gateway, database gateway), ADR-031 "两种执行分支都必须显式",
-- GW-1 and GW-2.
--
-- dispatch_slots: one slot per attempt + gateway deployment + attempt
--   manifest quadruple, reserved and advanced to bound or terminal_rejected
--   in the same transaction; both terminal states absorb; reply_body keeps
--   the canonical reply so a retry returns it byte for byte.
-- route_snapshots / attempt_route_bindings: GatewayRouteSnapshot@1 and the
--   unique AttemptRouteBinding@1 of a bound slot.
-- pre_binding_rejections: GatewayPreBindingRejectionFact@1 of a rejected slot.
-- provider_evidence: immutable GatewayProviderEvidence@1.
-- availability_snapshots / availability_currents: one Current chain per
--   (attempt, deployment, evidence kind, dimension); snapshots dense from
--   state version 1, only for bound slots; the pointer moves by CAS.
--
-- Custom SQLSTATEs: GW001 update/delete of an immutable gateway fact;
-- GW002 illegal slot transition; GW003 availability for a slot that is not
-- bound; GW004 availability chain not dense or pointer not advancing by one.

-- +goose Up
-- +goose StatementBegin
CREATE SCHEMA gateway;

COMMENT ON SCHEMA gateway IS
  'OceanWay Gateway owner: dispatch slots, route bindings, pre-binding rejections, provider evidence, availability chains.';

CREATE FUNCTION gateway.reject_change() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  RAISE EXCEPTION 'gateway: % on %.% is forbidden (immutable gateway fact)', TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME
    USING ERRCODE = 'GW001';
END
$fn$;

CREATE TABLE gateway.dispatch_slots (
  execution_attempt_id                                uuid        NOT NULL PRIMARY KEY,
  gateway_deployment_id                               text        NOT NULL,
  attempt_execution_manifest_ref                      text        NOT NULL,
  attempt_execution_manifest_schema_version           text        NOT NULL,
  attempt_execution_manifest_digest_algorithm_version text        NOT NULL,
  attempt_execution_manifest_digest                   text        NOT NULL,
  run_id                                              uuid        NOT NULL,
  run_step_id                                         uuid        NOT NULL,
  tenant_kind                                         text        NOT NULL,
  tenant_id                                           uuid        NOT NULL,
  workspace_id                                        uuid        NOT NULL,
  project_id                                          uuid,
  manifest_body                                       text        NOT NULL,
  state                                               text        NOT NULL CHECK (state IN ('reserved', 'bound', 'terminal_rejected')),
  reply_body                                          text,
  reserved_at                                         timestamptz NOT NULL,
  terminal_at                                         timestamptz,
  UNIQUE (execution_attempt_id, gateway_deployment_id, attempt_execution_manifest_ref, attempt_execution_manifest_schema_version,
          attempt_execution_manifest_digest_algorithm_version, attempt_execution_manifest_digest),
  CHECK ((state = 'reserved') = (reply_body IS NULL AND terminal_at IS NULL))
);

CREATE FUNCTION gateway.guard_slot() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF /* guard GW001.slot-no-delete */ TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'gateway: DELETE on gateway.dispatch_slots is forbidden' USING ERRCODE = 'GW001';
  END IF;
  IF /* guard GW002.slot-terminal-absorbs */ OLD.state <> 'reserved' OR NEW.state NOT IN ('bound', 'terminal_rejected') THEN
    RAISE EXCEPTION 'gateway: slot % cannot move % → % (terminal states absorb)', OLD.execution_attempt_id, OLD.state, NEW.state
      USING ERRCODE = 'GW002';
  END IF;
  IF /* guard GW002.slot-key-immutable */ (NEW.execution_attempt_id, NEW.gateway_deployment_id, NEW.attempt_execution_manifest_ref,
      NEW.attempt_execution_manifest_schema_version, NEW.attempt_execution_manifest_digest_algorithm_version,
      NEW.attempt_execution_manifest_digest, NEW.run_id, NEW.run_step_id, NEW.tenant_kind, NEW.tenant_id,
      NEW.workspace_id, NEW.project_id, NEW.manifest_body, NEW.reserved_at)
     IS DISTINCT FROM
     (OLD.execution_attempt_id, OLD.gateway_deployment_id, OLD.attempt_execution_manifest_ref,
      OLD.attempt_execution_manifest_schema_version, OLD.attempt_execution_manifest_digest_algorithm_version,
      OLD.attempt_execution_manifest_digest, OLD.run_id, OLD.run_step_id, OLD.tenant_kind, OLD.tenant_id,
      OLD.workspace_id, OLD.project_id, OLD.manifest_body, OLD.reserved_at) THEN
    RAISE EXCEPTION 'gateway: the key of slot % is immutable', OLD.execution_attempt_id USING ERRCODE = 'GW002';
  END IF;
  RETURN NEW;
END
$fn$;

CREATE TRIGGER dispatch_slots_guard
  BEFORE UPDATE OR DELETE ON gateway.dispatch_slots
  FOR EACH ROW EXECUTE FUNCTION gateway.guard_slot();

CREATE TABLE gateway.route_snapshots (
  gateway_route_snapshot_ref                      text        NOT NULL PRIMARY KEY,
  gateway_route_snapshot_schema_version           text        NOT NULL CHECK (gateway_route_snapshot_schema_version = '1'),
  gateway_route_snapshot_digest_algorithm_version text        NOT NULL CHECK (gateway_route_snapshot_digest_algorithm_version = 'jcs-sha256-v1'),
  gateway_route_snapshot_digest                   text        NOT NULL CHECK (gateway_route_snapshot_digest ~ '^[0-9a-f]{64}$'),
  execution_attempt_id                            uuid        NOT NULL UNIQUE REFERENCES gateway.dispatch_slots,
  snapshot_body                                   text        NOT NULL,
  captured_at                                     timestamptz NOT NULL
);

CREATE TABLE gateway.attempt_route_bindings (
  attempt_route_binding_ref                       text        NOT NULL PRIMARY KEY,
  attempt_route_binding_schema_version            text        NOT NULL CHECK (attempt_route_binding_schema_version = '1'),
  attempt_route_binding_digest_algorithm_version  text        NOT NULL CHECK (attempt_route_binding_digest_algorithm_version = 'jcs-sha256-v1'),
  attempt_route_binding_digest                    text        NOT NULL CHECK (attempt_route_binding_digest ~ '^[0-9a-f]{64}$'),
  execution_attempt_id                            uuid        NOT NULL UNIQUE REFERENCES gateway.dispatch_slots,
  gateway_route_snapshot_ref                      text        NOT NULL UNIQUE REFERENCES gateway.route_snapshots,
  binding_body                                    text        NOT NULL,
  bound_at                                        timestamptz NOT NULL
);

CREATE TABLE gateway.pre_binding_rejections (
  gateway_pre_binding_rejection_fact_ref          text        NOT NULL PRIMARY KEY,
  gateway_pre_binding_rejection_fact_schema_version text      NOT NULL CHECK (gateway_pre_binding_rejection_fact_schema_version = '1'),
  gateway_pre_binding_rejection_fact_digest_algorithm_version text NOT NULL CHECK (gateway_pre_binding_rejection_fact_digest_algorithm_version = 'jcs-sha256-v1'),
  gateway_pre_binding_rejection_fact_digest       text        NOT NULL CHECK (gateway_pre_binding_rejection_fact_digest ~ '^[0-9a-f]{64}$'),
  execution_attempt_id                            uuid        NOT NULL UNIQUE REFERENCES gateway.dispatch_slots,
  rejection_reason_code                           text        NOT NULL,
  fact_body                                       text        NOT NULL,
  rejected_at                                     timestamptz NOT NULL
);

-- A slot is either bound or rejected, never both (exclusive terminal states).
CREATE FUNCTION gateway.guard_exclusive_terminal() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF /* guard GW002.binding-after-rejection */ TG_TABLE_NAME = 'attempt_route_bindings' AND EXISTS (
       SELECT 1 FROM gateway.pre_binding_rejections WHERE execution_attempt_id = NEW.execution_attempt_id) THEN
    RAISE EXCEPTION 'gateway: slot % is terminal_rejected: no binding', NEW.execution_attempt_id USING ERRCODE = 'GW002';
  END IF;
  IF /* guard GW002.rejection-after-binding */ TG_TABLE_NAME = 'pre_binding_rejections' AND EXISTS (
       SELECT 1 FROM gateway.attempt_route_bindings WHERE execution_attempt_id = NEW.execution_attempt_id) THEN
    RAISE EXCEPTION 'gateway: slot % is bound: no pre-binding rejection', NEW.execution_attempt_id USING ERRCODE = 'GW002';
  END IF;
  RETURN NEW;
END
$fn$;

CREATE TRIGGER attempt_route_bindings_exclusive BEFORE INSERT ON gateway.attempt_route_bindings
  FOR EACH ROW EXECUTE FUNCTION gateway.guard_exclusive_terminal();
CREATE TRIGGER pre_binding_rejections_exclusive BEFORE INSERT ON gateway.pre_binding_rejections
  FOR EACH ROW EXECUTE FUNCTION gateway.guard_exclusive_terminal();

CREATE TABLE gateway.provider_evidence (
  provider_evidence_ref                           text        NOT NULL PRIMARY KEY,
  provider_evidence_schema_version                text        NOT NULL CHECK (provider_evidence_schema_version = '1'),
  provider_evidence_digest_algorithm_version      text        NOT NULL CHECK (provider_evidence_digest_algorithm_version = 'jcs-sha256-v1'),
  provider_evidence_digest                        text        NOT NULL CHECK (provider_evidence_digest ~ '^[0-9a-f]{64}$'),
  execution_attempt_id                            uuid        NOT NULL REFERENCES gateway.attempt_route_bindings (execution_attempt_id),
  provider_evidence_kind                          text        NOT NULL CHECK (provider_evidence_kind IN ('provider_usage', 'provider_cost')),
  evidence_dimension_key                          text        NOT NULL,
  evidence_body                                   text        NOT NULL,
  observed_at                                     timestamptz NOT NULL
);

CREATE TABLE gateway.availability_currents (
  chain_id                                        uuid        NOT NULL PRIMARY KEY,
  execution_attempt_id                            uuid        NOT NULL REFERENCES gateway.attempt_route_bindings (execution_attempt_id),
  gateway_deployment_id                           text        NOT NULL,
  provider_evidence_kind                          text        NOT NULL CHECK (provider_evidence_kind IN ('provider_usage', 'provider_cost')),
  evidence_dimension_key                          text        NOT NULL,
  current_availability_ref                        text        NOT NULL,
  current_state_version                           bigint      NOT NULL CHECK (current_state_version >= 1),
  UNIQUE (execution_attempt_id, gateway_deployment_id, provider_evidence_kind, evidence_dimension_key)
);

CREATE TABLE gateway.availability_snapshots (
  current_availability_ref                        text        NOT NULL PRIMARY KEY,
  current_availability_schema_version             text        NOT NULL CHECK (current_availability_schema_version = '1'),
  current_availability_digest_algorithm_version   text        NOT NULL CHECK (current_availability_digest_algorithm_version = 'jcs-sha256-v1'),
  current_availability_digest                     text        NOT NULL CHECK (current_availability_digest ~ '^[0-9a-f]{64}$'),
  chain_id                                        uuid        NOT NULL,
  execution_attempt_id                            uuid        NOT NULL REFERENCES gateway.attempt_route_bindings (execution_attempt_id),
  state_version                                   bigint      NOT NULL CHECK (state_version >= 1),
  availability_state                              text        NOT NULL CHECK (availability_state IN ('available', 'pending', 'not_reported', 'unavailable', 'conflicting')),
  provider_evidence_ref                           text        REFERENCES gateway.provider_evidence,
  snapshot_body                                   text        NOT NULL,
  event_id                                        uuid        NOT NULL UNIQUE,
  recorded_at                                     timestamptz NOT NULL,
  UNIQUE (chain_id, state_version),
  -- the key the current pointer references: a pointer names a snapshot of
  -- its own chain at exactly its own version
  UNIQUE (chain_id, state_version, current_availability_ref),
  CHECK ((availability_state = 'available') = (provider_evidence_ref IS NOT NULL))
);

ALTER TABLE gateway.availability_currents
  ADD FOREIGN KEY (chain_id, current_state_version, current_availability_ref)
    REFERENCES gateway.availability_snapshots (chain_id, state_version, current_availability_ref)
    DEFERRABLE INITIALLY DEFERRED;

-- Dense chains: version n > 1 needs version n - 1 of the same chain.
CREATE FUNCTION gateway.guard_snapshot_insert() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF /* guard GW003.snapshot-slot-not-bound */ NOT EXISTS (SELECT 1 FROM gateway.dispatch_slots WHERE execution_attempt_id = NEW.execution_attempt_id AND state = 'bound') THEN
    RAISE EXCEPTION 'gateway: availability for slot % that is not bound (pre-binding snapshots are never chained)', NEW.execution_attempt_id
      USING ERRCODE = 'GW003';
  END IF;
  IF /* guard GW004.snapshot-chain-gap */ NEW.state_version > 1 AND NOT EXISTS (
       SELECT 1 FROM gateway.availability_snapshots WHERE chain_id = NEW.chain_id AND state_version = NEW.state_version - 1) THEN
    RAISE EXCEPTION 'gateway: chain % has no state version %', NEW.chain_id, NEW.state_version - 1 USING ERRCODE = 'GW004';
  END IF;
  RETURN NEW;
END
$fn$;

CREATE TRIGGER availability_snapshots_guard_insert BEFORE INSERT ON gateway.availability_snapshots
  FOR EACH ROW EXECUTE FUNCTION gateway.guard_snapshot_insert();

-- The pointer starts at 1 and advances by exactly one.
CREATE FUNCTION gateway.guard_current() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF /* guard GW004.chain-starts-at-one */ NEW.current_state_version <> 1 THEN
      RAISE EXCEPTION 'gateway: chain % starts at state version 1', NEW.chain_id USING ERRCODE = 'GW004';
    END IF;
    RETURN NEW;
  END IF;
  IF /* guard GW001.current-no-delete */ TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'gateway: DELETE on gateway.availability_currents is forbidden' USING ERRCODE = 'GW001';
  END IF;
  IF /* guard GW004.pointer-advances-by-one */ NEW.current_state_version <> OLD.current_state_version + 1
     OR (NEW.chain_id, NEW.execution_attempt_id, NEW.gateway_deployment_id, NEW.provider_evidence_kind, NEW.evidence_dimension_key)
        IS DISTINCT FROM (OLD.chain_id, OLD.execution_attempt_id, OLD.gateway_deployment_id, OLD.provider_evidence_kind, OLD.evidence_dimension_key) THEN
    RAISE EXCEPTION 'gateway: chain % pointer must advance by one', OLD.chain_id USING ERRCODE = 'GW004';
  END IF;
  RETURN NEW;
END
$fn$;

CREATE TRIGGER availability_currents_guard BEFORE INSERT OR UPDATE OR DELETE ON gateway.availability_currents
  FOR EACH ROW EXECUTE FUNCTION gateway.guard_current();

CREATE TRIGGER /* guard GW001.route-snapshots-immutable */ route_snapshots_immutable BEFORE UPDATE OR DELETE ON gateway.route_snapshots
  FOR EACH ROW EXECUTE FUNCTION gateway.reject_change();
CREATE TRIGGER /* guard GW001.bindings-immutable */ attempt_route_bindings_immutable BEFORE UPDATE OR DELETE ON gateway.attempt_route_bindings
  FOR EACH ROW EXECUTE FUNCTION gateway.reject_change();
CREATE TRIGGER /* guard GW001.rejections-immutable */ pre_binding_rejections_immutable BEFORE UPDATE OR DELETE ON gateway.pre_binding_rejections
  FOR EACH ROW EXECUTE FUNCTION gateway.reject_change();
CREATE TRIGGER /* guard GW001.provider-evidence-immutable */ provider_evidence_immutable BEFORE UPDATE OR DELETE ON gateway.provider_evidence
  FOR EACH ROW EXECUTE FUNCTION gateway.reject_change();
CREATE TRIGGER /* guard GW001.snapshots-immutable */ availability_snapshots_immutable BEFORE UPDATE OR DELETE ON gateway.availability_snapshots
  FOR EACH ROW EXECUTE FUNCTION gateway.reject_change();
-- +goose StatementEnd
