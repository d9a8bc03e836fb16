-- Finalization reconciliation cases in the Operations read model (issue 31
-- item 3; ADR-031 "两条Mandatory Delivery没有隐式先后"; the outbox
-- document's PendingFinalizationCaseSuccessor rule). docs/operations.md
-- ("Finalization reconciliation cases") explains the rules; the projector
-- (internal/operations/projector, finalization_case.go) writes these rows.
--
-- Per projection (projection_name, projection_version), like every
-- projection table:
--
--   finalization_cases                     the case of a fence generation,
--       materialised from its verified case-requested event once the direct
--       predecessor is closed by its Billing resolution fact; open until
--       its verified resolution-applied event closes it (open → resolved,
--       absorbing). At most one open case per fence (a partial unique
--       index); a successor references its predecessor row.
--   pending_finalization_case_resolutions  a verified resolution whose
--       case request has not been materialised yet (pending → consumed).
--   pending_finalization_case_successors   a verified successor request
--       whose direct predecessor is not yet closed, frozen with everything
--       the case row needs (pending → materialized).
--
-- The frozen columns are insert-only: the projector's role may update only
-- the columns that move (grants below), the triggers refuse a move backwards
-- or sideways and every DELETE.
--
-- Custom SQLSTATE: OP006 a finalization case or pending case row moved
-- other than forward.

-- +goose Up
-- +goose StatementBegin
CREATE TABLE operations.finalization_cases (
  reconciliation_case_ref                         text        NOT NULL,
  projection_name                                 text        NOT NULL,
  projection_version                              bigint      NOT NULL,
  billing_finalization_fence_id                   uuid        NOT NULL,
  reconciliation_generation                       bigint      NOT NULL CHECK (reconciliation_generation >= 1),
  case_identity_ref                               text        NOT NULL,
  case_identity_schema_version                    text        NOT NULL,
  case_identity_digest_algorithm_version          text        NOT NULL,
  case_identity_digest                            text        NOT NULL,
  case_request_operation_id                       uuid        NOT NULL,
  predecessor_reconciliation_case_ref             text,
  predecessor_generation                          bigint,
  predecessor_case_identity_ref                   text,
  predecessor_case_identity_schema_version        text,
  predecessor_case_identity_digest_algorithm_version text,
  predecessor_case_identity_digest                text,
  billing_reservation_id                          uuid        NOT NULL,
  billing_account_id                              uuid        NOT NULL,
  run_id                                          uuid        NOT NULL,
  tenant_kind                                     text        NOT NULL,
  tenant_id                                       uuid        NOT NULL,
  workspace_id                                    uuid        NOT NULL,
  project_id                                      uuid,
  decision_ref                                    text        NOT NULL,
  decision_schema_version                         text        NOT NULL,
  decision_digest_algorithm_version               text        NOT NULL,
  decision_digest                                 text        NOT NULL,
  triggering_work_ref                             text        NOT NULL,
  triggering_work_schema_version                  text        NOT NULL,
  triggering_work_digest_algorithm_version        text        NOT NULL,
  triggering_work_digest                          text        NOT NULL,
  triggering_work_generation                      bigint      NOT NULL CHECK (triggering_work_generation >= 1),
  billing_finalization_operation_id               uuid        NOT NULL,
  reconciliation_reason_code                      text        NOT NULL,
  request_event_id                                uuid        NOT NULL,
  request_event_envelope_digest_algorithm_version text        NOT NULL,
  request_event_envelope_sha256                   text        NOT NULL CHECK (request_event_envelope_sha256 ~ '^[0-9a-f]{64}$'),
  requested_at                                    timestamptz NOT NULL,
  -- The event whose transaction created the row: the request itself, or the
  -- predecessor's resolution or request that consumed a pending successor.
  materialized_by_event_id                        uuid        NOT NULL,
  materialized_at                                 timestamptz NOT NULL,
  state                                           text        NOT NULL CHECK (state IN ('open', 'resolved')),
  resolution_event_id                             uuid,
  resolution_event_envelope_digest_algorithm_version text,
  resolution_event_envelope_sha256                text,
  resolution_operation_id                         uuid,
  resolution_applied_ref                          text,
  resolution_applied_schema_version               text,
  resolution_applied_digest_algorithm_version     text,
  resolution_applied_digest                       text,
  resolution_actor_workforce_principal_id         text,
  resolved_at                                     timestamptz,
  closed_at                                       timestamptz,
  PRIMARY KEY (reconciliation_case_ref, projection_name, projection_version),
  CONSTRAINT finalization_cases_generation_key UNIQUE (billing_finalization_fence_id, reconciliation_generation, projection_name, projection_version),
  CHECK ((reconciliation_generation = 1) = (predecessor_generation IS NULL)),
  CHECK (num_nonnulls(predecessor_reconciliation_case_ref, predecessor_generation, predecessor_case_identity_ref,
    predecessor_case_identity_schema_version, predecessor_case_identity_digest_algorithm_version,
    predecessor_case_identity_digest) IN (0, 6)),
  CHECK (predecessor_generation IS NULL OR predecessor_generation = reconciliation_generation - 1),
  -- A successor is materialised only after its predecessor's row.
  FOREIGN KEY (billing_finalization_fence_id, predecessor_generation, projection_name, projection_version)
    REFERENCES operations.finalization_cases (billing_finalization_fence_id, reconciliation_generation, projection_name, projection_version),
  CONSTRAINT finalization_cases_resolution_fields CHECK (/* guard OP006.case-resolution-fields */ CASE state
    WHEN 'open' THEN num_nonnulls(resolution_event_id, resolution_event_envelope_digest_algorithm_version,
      resolution_event_envelope_sha256, resolution_operation_id, resolution_applied_ref, resolution_applied_schema_version,
      resolution_applied_digest_algorithm_version, resolution_applied_digest, resolution_actor_workforce_principal_id,
      resolved_at, closed_at) = 0
    ELSE num_nonnulls(resolution_event_id, resolution_event_envelope_digest_algorithm_version,
      resolution_event_envelope_sha256, resolution_operation_id, resolution_applied_ref, resolution_applied_schema_version,
      resolution_applied_digest_algorithm_version, resolution_applied_digest, resolution_actor_workforce_principal_id,
      resolved_at, closed_at) = 11
  END)
);
-- Never two open finalization cases for one fence (ADR-031).
CREATE UNIQUE INDEX finalization_cases_one_open_per_fence ON operations.finalization_cases
  (billing_finalization_fence_id, projection_name, projection_version) WHERE state = 'open';

CREATE FUNCTION operations.finalization_case_close() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF /* guard OP006.case-resolved-absorbing */ OLD.state <> 'open' THEN
    RAISE EXCEPTION 'operations: finalization case % (%/%) is % already; a case closes once',
      OLD.reconciliation_case_ref, OLD.projection_name, OLD.projection_version, OLD.state USING ERRCODE = 'OP006';
  END IF;
  IF /* guard OP006.case-update-not-resolve */ NEW.state <> 'resolved' THEN
    RAISE EXCEPTION 'operations: finalization case % (%/%) may only move open → resolved',
      OLD.reconciliation_case_ref, OLD.projection_name, OLD.projection_version USING ERRCODE = 'OP006';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER finalization_cases_close_only BEFORE UPDATE ON operations.finalization_cases
  FOR EACH ROW EXECUTE FUNCTION operations.finalization_case_close();
CREATE TRIGGER /* guard OP001.finalization-cases-no-delete */ finalization_cases_no_delete BEFORE DELETE ON operations.finalization_cases
  FOR EACH ROW EXECUTE FUNCTION operations.reject_change();

CREATE TABLE operations.pending_finalization_case_resolutions (
  reconciliation_case_ref                         text        NOT NULL,
  projection_name                                 text        NOT NULL,
  projection_version                              bigint      NOT NULL,
  billing_finalization_fence_id                   uuid        NOT NULL,
  reconciliation_generation                       bigint      NOT NULL CHECK (reconciliation_generation >= 1),
  case_identity_ref                               text        NOT NULL,
  case_identity_schema_version                    text        NOT NULL,
  case_identity_digest_algorithm_version          text        NOT NULL,
  case_identity_digest                            text        NOT NULL,
  billing_reservation_id                          uuid        NOT NULL,
  billing_account_id                              uuid        NOT NULL,
  run_id                                          uuid        NOT NULL,
  resolution_event_id                             uuid        NOT NULL,
  resolution_event_envelope_digest_algorithm_version text     NOT NULL,
  resolution_event_envelope_sha256                text        NOT NULL CHECK (resolution_event_envelope_sha256 ~ '^[0-9a-f]{64}$'),
  resolution_operation_id                         uuid        NOT NULL,
  resolution_applied_ref                          text        NOT NULL,
  resolution_applied_schema_version               text        NOT NULL,
  resolution_applied_digest_algorithm_version     text        NOT NULL,
  resolution_applied_digest                       text        NOT NULL,
  resolution_actor_workforce_principal_id         text        NOT NULL,
  resolved_at                                     timestamptz NOT NULL,
  received_at                                     timestamptz NOT NULL,
  status                                          text        NOT NULL CHECK (status IN ('pending', 'consumed')),
  consumed_at                                     timestamptz,
  consumed_by_event_id                            uuid,
  PRIMARY KEY (reconciliation_case_ref, projection_name, projection_version),
  UNIQUE (billing_finalization_fence_id, reconciliation_generation, projection_name, projection_version),
  CHECK ((status = 'consumed') = (consumed_at IS NOT NULL AND consumed_by_event_id IS NOT NULL)),
  CHECK (num_nonnulls(consumed_at, consumed_by_event_id) IN (0, 2))
);

CREATE TABLE operations.pending_finalization_case_successors (
  reconciliation_case_ref                         text        NOT NULL,
  projection_name                                 text        NOT NULL,
  projection_version                              bigint      NOT NULL,
  billing_finalization_fence_id                   uuid        NOT NULL,
  reconciliation_generation                       bigint      NOT NULL CHECK (reconciliation_generation >= 2),
  case_identity_ref                               text        NOT NULL,
  case_identity_schema_version                    text        NOT NULL,
  case_identity_digest_algorithm_version          text        NOT NULL,
  case_identity_digest                            text        NOT NULL,
  case_request_operation_id                       uuid        NOT NULL,
  predecessor_reconciliation_case_ref             text        NOT NULL,
  predecessor_generation                          bigint      NOT NULL,
  predecessor_case_identity_ref                   text        NOT NULL,
  predecessor_case_identity_schema_version        text        NOT NULL,
  predecessor_case_identity_digest_algorithm_version text     NOT NULL,
  predecessor_case_identity_digest                text        NOT NULL,
  billing_reservation_id                          uuid        NOT NULL,
  billing_account_id                              uuid        NOT NULL,
  run_id                                          uuid        NOT NULL,
  tenant_kind                                     text        NOT NULL,
  tenant_id                                       uuid        NOT NULL,
  workspace_id                                    uuid        NOT NULL,
  project_id                                      uuid,
  decision_ref                                    text        NOT NULL,
  decision_schema_version                         text        NOT NULL,
  decision_digest_algorithm_version               text        NOT NULL,
  decision_digest                                 text        NOT NULL,
  triggering_work_ref                             text        NOT NULL,
  triggering_work_schema_version                  text        NOT NULL,
  triggering_work_digest_algorithm_version        text        NOT NULL,
  triggering_work_digest                          text        NOT NULL,
  triggering_work_generation                      bigint      NOT NULL CHECK (triggering_work_generation >= 1),
  billing_finalization_operation_id               uuid        NOT NULL,
  reconciliation_reason_code                      text        NOT NULL,
  request_event_id                                uuid        NOT NULL,
  request_event_envelope_digest_algorithm_version text        NOT NULL,
  request_event_envelope_sha256                   text        NOT NULL CHECK (request_event_envelope_sha256 ~ '^[0-9a-f]{64}$'),
  requested_at                                    timestamptz NOT NULL,
  received_at                                     timestamptz NOT NULL,
  status                                          text        NOT NULL CHECK (status IN ('pending', 'materialized')),
  materialized_at                                 timestamptz,
  materialized_by_event_id                        uuid,
  PRIMARY KEY (reconciliation_case_ref, projection_name, projection_version),
  UNIQUE (billing_finalization_fence_id, reconciliation_generation, projection_name, projection_version),
  CHECK (predecessor_generation = reconciliation_generation - 1),
  CHECK ((status = 'materialized') = (materialized_at IS NOT NULL AND materialized_by_event_id IS NOT NULL)),
  CHECK (num_nonnulls(materialized_at, materialized_by_event_id) IN (0, 2))
);

-- One guard for both pending tables: a pending row moves once, from
-- pending to its one terminal status (consumed / materialized).
CREATE FUNCTION operations.finalization_pending_take() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF /* guard OP006.pending-taken-absorbing */ OLD.status <> 'pending' THEN
    RAISE EXCEPTION 'operations: % row % (%/%) is % already; a pending row is taken once',
      TG_TABLE_NAME, OLD.reconciliation_case_ref, OLD.projection_name, OLD.projection_version, OLD.status USING ERRCODE = 'OP006';
  END IF;
  IF /* guard OP006.pending-update-not-take */ NEW.status = 'pending' THEN
    RAISE EXCEPTION 'operations: % row % (%/%) may only move from pending to taken',
      TG_TABLE_NAME, OLD.reconciliation_case_ref, OLD.projection_name, OLD.projection_version USING ERRCODE = 'OP006';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER pending_finalization_case_resolutions_take_once BEFORE UPDATE ON operations.pending_finalization_case_resolutions
  FOR EACH ROW EXECUTE FUNCTION operations.finalization_pending_take();
CREATE TRIGGER pending_finalization_case_successors_take_once BEFORE UPDATE ON operations.pending_finalization_case_successors
  FOR EACH ROW EXECUTE FUNCTION operations.finalization_pending_take();
CREATE TRIGGER /* guard OP001.pending-case-resolutions-no-delete */ pending_finalization_case_resolutions_no_delete
  BEFORE DELETE ON operations.pending_finalization_case_resolutions
  FOR EACH ROW EXECUTE FUNCTION operations.reject_change();
CREATE TRIGGER /* guard OP001.pending-case-successors-no-delete */ pending_finalization_case_successors_no_delete
  BEFORE DELETE ON operations.pending_finalization_case_successors
  FOR EACH ROW EXECUTE FUNCTION operations.reject_change();

-- Shadow fence (00003): a shadow build's rows are written only under its
-- current claim token, keyed by the event the transaction applies.
CREATE TRIGGER finalization_cases_shadow_fence BEFORE INSERT ON operations.finalization_cases
  FOR EACH ROW EXECUTE FUNCTION operations.shadow_fence('materialized_by_event_id');
CREATE TRIGGER pending_finalization_case_resolutions_shadow_fence BEFORE INSERT ON operations.pending_finalization_case_resolutions
  FOR EACH ROW EXECUTE FUNCTION operations.shadow_fence('resolution_event_id');
CREATE TRIGGER pending_finalization_case_successors_shadow_fence BEFORE INSERT ON operations.pending_finalization_case_successors
  FOR EACH ROW EXECUTE FUNCTION operations.shadow_fence('request_event_id');

-- The mutation log's effects of the two pairs.
ALTER TABLE operations.projected_events DROP CONSTRAINT projected_events_projection_effect_check;
ALTER TABLE operations.projected_events ADD CONSTRAINT projected_events_projection_effect_check CHECK (projection_effect IN (
  'operation_created', 'operation_created_reservation_linked',
  'reservation_linked', 'reservation_pending_unlinked',
  'reservation_finalized', 'pending_reservation_finalized',
  'settlement_transition_recorded',
  'finalization_case_opened', 'finalization_case_materialized_resolved', 'finalization_case_successor_pending',
  'finalization_case_resolved', 'finalization_case_resolution_pending'));

REVOKE ALL ON operations.finalization_cases, operations.pending_finalization_case_resolutions,
  operations.pending_finalization_case_successors FROM PUBLIC;
REVOKE ALL ON FUNCTION operations.finalization_case_close(), operations.finalization_pending_take() FROM PUBLIC;
GRANT SELECT, INSERT ON operations.finalization_cases, operations.pending_finalization_case_resolutions,
  operations.pending_finalization_case_successors TO oceanway_operations;
GRANT UPDATE (state, resolution_event_id, resolution_event_envelope_digest_algorithm_version, resolution_event_envelope_sha256,
  resolution_operation_id, resolution_applied_ref, resolution_applied_schema_version, resolution_applied_digest_algorithm_version,
  resolution_applied_digest, resolution_actor_workforce_principal_id, resolved_at, closed_at)
  ON operations.finalization_cases TO oceanway_operations;
GRANT UPDATE (status, consumed_at, consumed_by_event_id) ON operations.pending_finalization_case_resolutions TO oceanway_operations;
GRANT UPDATE (status, materialized_at, materialized_by_event_id) ON operations.pending_finalization_case_successors TO oceanway_operations;
GRANT EXECUTE ON FUNCTION operations.finalization_case_close(), operations.finalization_pending_take() TO oceanway_operations;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DROP TABLE operations.pending_finalization_case_successors, operations.pending_finalization_case_resolutions,
  operations.finalization_cases;
DROP FUNCTION operations.finalization_case_close(), operations.finalization_pending_take();
ALTER TABLE operations.projected_events DROP CONSTRAINT projected_events_projection_effect_check;
ALTER TABLE operations.projected_events ADD CONSTRAINT projected_events_projection_effect_check CHECK (projection_effect IN (
  'operation_created', 'operation_created_reservation_linked',
  'reservation_linked', 'reservation_pending_unlinked',
  'reservation_finalized', 'pending_reservation_finalized',
  'settlement_transition_recorded'));
-- +goose StatementEnd
