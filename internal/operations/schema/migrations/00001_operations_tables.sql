-- Operations read model (schema operations, database core): the Operations
-- projector's receipts, projection state, revision gaps, build summaries and
-- completeness proofs (CON-1, OPS-1..OPS-5). docs/operations.md explains
-- every table and rule.
--
-- Every projection row carries (projection_name, projection_version): a
-- shadow version is built side by side and a receipt of one version never
-- answers a delivery frozen to another.
--
-- Custom SQLSTATE: OP001 update/delete of an insert-only fact.

-- +goose Up
-- +goose StatementBegin
CREATE SCHEMA operations;

COMMENT ON SCHEMA operations IS
  'OceanWay Operations read model: projector receipts, projection state, gaps, build summaries, completeness proofs.';

CREATE FUNCTION operations.reject_change() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  RAISE EXCEPTION 'operations: % on %.% is forbidden (insert-only fact)', TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME
    USING ERRCODE = 'OP001';
END
$fn$;

-- OperationsProjectionAppliedReceipt@1 (OPS-1 step 5). The inbox's standard
-- receipt table: key (consumer, projection, version, event), body = RFC 8785
-- canonical bytes, returned verbatim on redelivery.
CREATE TABLE operations.applied_receipts (
  consumer_name                           text        NOT NULL CHECK (consumer_name = 'operations_projector'),
  projection_name                         text        NOT NULL,
  projection_version                      bigint      NOT NULL CHECK (projection_version >= 1),
  event_id                                uuid        NOT NULL,
  event_type                              text        NOT NULL,
  event_schema_version                    text        NOT NULL,
  event_envelope_digest_algorithm_version text        NOT NULL CHECK (event_envelope_digest_algorithm_version = 'jcs-sha256-v1'),
  event_envelope_sha256                   text        NOT NULL CHECK (event_envelope_sha256 ~ '^[0-9a-f]{64}$'),
  receipt_ref                             text        NOT NULL UNIQUE,
  receipt_schema_version                  text        NOT NULL CHECK (receipt_schema_version = '1'),
  receipt_digest_algorithm_version        text        NOT NULL CHECK (receipt_digest_algorithm_version = 'jcs-sha256-v1'),
  receipt_digest                          text        NOT NULL CHECK (receipt_digest ~ '^[0-9a-f]{64}$'),
  receipt_body                            text        NOT NULL,
  recorded_at                             timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer_name, projection_name, projection_version, event_id)
);
CREATE TRIGGER /* guard OP001.applied-receipts-insert-only */ applied_receipts_insert_only BEFORE UPDATE OR DELETE ON operations.applied_receipts
  FOR EACH ROW EXECUTE FUNCTION operations.reject_change();

-- Per-aggregate revision state (OPS-1 steps 2-3): one row per
-- (aggregateType, aggregateId); applied_revision is the highest contiguous
-- applied aggregateRevision (0 = created by a gap, nothing applied yet).
CREATE TABLE operations.projection_aggregates (
  projection_name    text        NOT NULL,
  projection_version bigint      NOT NULL,
  aggregate_type     text        NOT NULL,
  aggregate_id       text        NOT NULL,
  applied_revision   bigint      NOT NULL DEFAULT 0 CHECK (applied_revision >= 0),
  last_event_id      uuid,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (projection_name, projection_version, aggregate_type, aggregate_id),
  CHECK ((applied_revision = 0) = (last_event_id IS NULL))
);

-- The projection mutation log (OPS-1 step 4) and the source of an
-- operation's timeline: one row per applied event. The unique key forbids
-- two events at one aggregate revision.
CREATE TABLE operations.projected_events (
  projection_name        text        NOT NULL,
  projection_version     bigint      NOT NULL,
  event_id               uuid        NOT NULL,
  event_type             text        NOT NULL,
  event_schema_version   text        NOT NULL,
  aggregate_type         text        NOT NULL,
  aggregate_id           text        NOT NULL,
  aggregate_revision     bigint      NOT NULL CHECK (aggregate_revision >= 1),
  run_id                 uuid        NOT NULL,
  billing_reservation_id uuid,
  correlation_id         uuid        NOT NULL,
  causation_id           uuid,
  operation_id           uuid,
  occurred_at            timestamptz NOT NULL,
  applied_at             timestamptz NOT NULL,
  projection_effect      text        NOT NULL CHECK (projection_effect IN (
                           'operation_created', 'operation_created_reservation_linked',
                           'reservation_linked', 'reservation_pending_unlinked',
                           'reservation_finalized', 'pending_reservation_finalized')),
  PRIMARY KEY (projection_name, projection_version, event_id),
  UNIQUE (projection_name, projection_version, aggregate_type, aggregate_id, aggregate_revision)
);
CREATE INDEX projected_events_run ON operations.projected_events (projection_name, projection_version, run_id, occurred_at);
CREATE TRIGGER /* guard OP001.projected-events-insert-only */ projected_events_insert_only BEFORE UPDATE OR DELETE ON operations.projected_events
  FOR EACH ROW EXECUTE FUNCTION operations.reject_change();

-- Operation summaries: one per Run, created only by run.created@2.0 (OPS-3).
-- reservation_state source_delayed = the wallet event has not been projected
-- yet: the reservation fields stay empty, never a made-up state.
CREATE TABLE operations.operation_summaries (
  projection_name                 text        NOT NULL,
  projection_version              bigint      NOT NULL,
  run_id                          uuid        NOT NULL,
  operation_id                    uuid,
  correlation_id                  uuid        NOT NULL,
  tenant_kind                     text        NOT NULL,
  tenant_id                       uuid        NOT NULL,
  workspace_id                    uuid        NOT NULL,
  project_id                      uuid,
  billing_account_id              uuid        NOT NULL,
  billing_reservation_id          uuid        NOT NULL,
  run_admission_manifest_ref      text        NOT NULL,
  run_admission_manifest_schema_version text  NOT NULL,
  run_admission_manifest_digest_algorithm_version text NOT NULL,
  run_admission_manifest_digest   text        NOT NULL,
  run_event_id                    uuid        NOT NULL,
  run_occurred_at                 timestamptz NOT NULL,
  reservation_state               text        NOT NULL CHECK (reservation_state IN ('source_delayed', 'reserved', 'finalized')),
  reservation_event_id            uuid,
  reservation_occurred_at         timestamptz,
  reservation_economic_identity   text,
  reserved_amount                 text,
  finalization_event_id           uuid,
  finalization_occurred_at        timestamptz,
  billing_finalization_decision   text,
  settled_amount                  text,
  released_amount                 text,
  created_at                      timestamptz NOT NULL,
  updated_at                      timestamptz NOT NULL,
  PRIMARY KEY (projection_name, projection_version, run_id),
  UNIQUE (projection_name, projection_version, billing_reservation_id),
  CONSTRAINT operation_summaries_reservation_fields CHECK (
    CASE reservation_state
      WHEN 'source_delayed' THEN num_nonnulls(reservation_event_id, reservation_occurred_at, reservation_economic_identity,
        reserved_amount, finalization_event_id, finalization_occurred_at, billing_finalization_decision, settled_amount, released_amount) = 0
      WHEN 'reserved' THEN num_nonnulls(reservation_event_id, reservation_occurred_at, reservation_economic_identity, reserved_amount) = 4
        AND num_nonnulls(finalization_event_id, finalization_occurred_at, billing_finalization_decision, settled_amount, released_amount) = 0
      ELSE num_nonnulls(reservation_event_id, reservation_occurred_at, reservation_economic_identity, reserved_amount,
        finalization_event_id, finalization_occurred_at, billing_finalization_decision, settled_amount, released_amount) = 9
    END)
);

-- Exact-identifier index (OPS-1 step 4): run id, reservation id, event id,
-- correlation id, operation id → the operation (run id). Exact values only:
-- no prefix or pattern lookups.
CREATE TABLE operations.identifier_index (
  projection_name    text   NOT NULL,
  projection_version bigint NOT NULL,
  identifier_kind    text   NOT NULL CHECK (identifier_kind IN ('run_id', 'reservation_id', 'event_id', 'correlation_id', 'operation_id')),
  identifier_value   uuid   NOT NULL,
  run_id             uuid   NOT NULL,
  PRIMARY KEY (projection_name, projection_version, identifier_value, identifier_kind, run_id)
);

-- Wallet-before-Run (OPS-3): a reservation whose Run event has not been
-- projected. Linked rows stay as audit (status linked) after the Run event
-- passed the causal and equality checks.
CREATE TABLE operations.pending_unlinked_reservations (
  projection_name                 text        NOT NULL,
  projection_version              bigint      NOT NULL,
  billing_reservation_id          uuid        NOT NULL,
  run_id                          uuid        NOT NULL,
  billing_account_id              uuid        NOT NULL,
  run_admission_manifest_ref      text        NOT NULL,
  run_admission_manifest_schema_version text  NOT NULL,
  run_admission_manifest_digest_algorithm_version text NOT NULL,
  run_admission_manifest_digest   text        NOT NULL,
  tenant_kind                     text        NOT NULL,
  tenant_id                       uuid        NOT NULL,
  workspace_id                    uuid        NOT NULL,
  project_id                      uuid,
  correlation_id                  uuid        NOT NULL,
  causation_id                    uuid,
  operation_id                    uuid,
  wallet_event_id                 uuid        NOT NULL,
  wallet_occurred_at              timestamptz NOT NULL,
  reservation_economic_identity   text        NOT NULL,
  reserved_amount                 text        NOT NULL,
  finalization_event_id           uuid,
  finalization_occurred_at        timestamptz,
  billing_finalization_decision   text,
  settled_amount                  text,
  released_amount                 text,
  status                          text        NOT NULL CHECK (status IN ('pending', 'linked')),
  received_at                     timestamptz NOT NULL,
  linked_at                       timestamptz,
  linked_by_event_id              uuid,
  PRIMARY KEY (projection_name, projection_version, billing_reservation_id),
  CHECK ((status = 'linked') = (linked_at IS NOT NULL AND linked_by_event_id IS NOT NULL)),
  CHECK (num_nonnulls(finalization_event_id, finalization_occurred_at, billing_finalization_decision, settled_amount, released_amount) IN (0, 5))
);
CREATE INDEX pending_unlinked_reservations_run ON operations.pending_unlinked_reservations (projection_name, projection_version, run_id)
  WHERE status = 'pending';

-- Revision gaps (OPS-2): an event whose aggregateRevision is beyond the next
-- expected one. No receipt is written for it; the row stays unresolved until
-- the waiting event itself is applied on a redelivery.
CREATE TABLE operations.revision_gaps (
  projection_name                         text        NOT NULL,
  projection_version                      bigint      NOT NULL,
  waiting_event_id                        uuid        NOT NULL,
  waiting_event_type                      text        NOT NULL,
  aggregate_type                          text        NOT NULL,
  aggregate_id                            text        NOT NULL,
  waiting_revision                        bigint      NOT NULL CHECK (waiting_revision >= 2),
  applied_revision_at_detection           bigint      NOT NULL CHECK (applied_revision_at_detection >= 0),
  event_envelope_digest_algorithm_version text        NOT NULL,
  event_envelope_sha256                   text        NOT NULL,
  detected_at                             timestamptz NOT NULL,
  last_seen_at                            timestamptz NOT NULL,
  seen_count                              integer     NOT NULL DEFAULT 1 CHECK (seen_count >= 1),
  resolved_at                             timestamptz,
  PRIMARY KEY (projection_name, projection_version, waiting_event_id),
  CHECK (applied_revision_at_detection + 1 < waiting_revision)
);
CREATE INDEX revision_gaps_open ON operations.revision_gaps (projection_name, projection_version, aggregate_type, aggregate_id)
  WHERE resolved_at IS NULL;

-- Known core_operations pairs this projector release does not project yet
-- (unsupported schema in scope, OPS-4). Recorded with a recoverable wait,
-- resolved when a projector that supports the pair applies the event.
CREATE TABLE operations.unsupported_events (
  projection_name                         text        NOT NULL,
  projection_version                      bigint      NOT NULL,
  event_id                                uuid        NOT NULL,
  event_type                              text        NOT NULL,
  event_schema_version                    text        NOT NULL,
  event_envelope_digest_algorithm_version text        NOT NULL,
  event_envelope_sha256                   text        NOT NULL,
  reason_code                             text        NOT NULL,
  first_seen_at                           timestamptz NOT NULL,
  last_seen_at                            timestamptz NOT NULL,
  seen_count                              integer     NOT NULL DEFAULT 1,
  resolved_at                             timestamptz,
  PRIMARY KEY (projection_name, projection_version, event_id)
);

-- Projection build summaries (OPS-1 step 6): one row per projector
-- instance ("build run") and projection version, with the last successful
-- application time. It never proves that earlier events were all applied.
CREATE TABLE operations.projection_builds (
  build_id           uuid        NOT NULL,
  projection_name    text        NOT NULL,
  projection_version bigint      NOT NULL,
  consumer_name      text        NOT NULL,
  worker_version     text        NOT NULL,
  started_at         timestamptz NOT NULL,
  applied_count      bigint      NOT NULL DEFAULT 0,
  waited_count       bigint      NOT NULL DEFAULT 0,
  last_applied_at    timestamptz,
  last_event_id      uuid,
  last_event_type    text,
  updated_at         timestamptz NOT NULL,
  PRIMARY KEY (build_id, projection_name, projection_version)
);

-- Completeness proof manifests (OPS-4): what one consistent snapshot proved
-- and the exact inputs it proved it from, for later currency checks.
CREATE TABLE operations.completeness_proofs (
  snapshot_id              uuid        NOT NULL PRIMARY KEY,
  projection_name          text        NOT NULL,
  projection_version       bigint      NOT NULL,
  query_definition_version text        NOT NULL,
  evaluated_at             timestamptz NOT NULL,
  database_snapshot        text        NOT NULL,
  projection_completeness  text        NOT NULL CHECK (projection_completeness IN ('complete_for_supported_scope', 'partial_source_gap')),
  reasons                  text[]      NOT NULL,
  inputs                   jsonb       NOT NULL,
  inputs_fingerprint       text        NOT NULL,
  CHECK ((projection_completeness = 'complete_for_supported_scope') = (cardinality(reasons) = 0))
);
CREATE INDEX completeness_proofs_latest ON operations.completeness_proofs (projection_name, projection_version, evaluated_at DESC);
CREATE TRIGGER /* guard OP001.completeness-proofs-insert-only */ completeness_proofs_insert_only BEFORE UPDATE OR DELETE ON operations.completeness_proofs
  FOR EACH ROW EXECUTE FUNCTION operations.reject_change();
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DROP SCHEMA operations CASCADE;
-- +goose StatementEnd
