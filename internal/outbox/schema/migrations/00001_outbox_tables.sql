-- Outbox storage (OB-STORE-1, OB-STORE-3, OB-STORE-4, OB-STORE-5, DS-4, DS-6, DS-8).
-- The outbox line is forward-only (docs/outbox-storage.md, "The outbox line").
-- Column names follow the outbox document (存储边界) exactly; see
-- docs/outbox-storage.md for the additions and every constraint's reason.

-- +goose Up
-- +goose StatementBegin
CREATE SCHEMA outbox;

COMMENT ON SCHEMA outbox IS
  'OceanWay outbox: immutable events, frozen Delivery Set Definitions, per-destination delivery state, attempt facts and quarantine.';

-- Destination bindings (OB-DELIVER-1, DS-4): the consumer a destination
-- maps to (one to one), the receipt contract its members must expect and
-- whether they freeze a projection target. The outbox engine knows no
-- destination: bindings are data, seeded by the product's release through
-- the controlled function outbox.bind_destination (00002) and immutable
-- once written. Members reference their binding (foreign key below);
-- delivery rows are checked against it on insert (OW016, 00002).
CREATE TABLE outbox.destination_bindings (
  destination                     text        NOT NULL PRIMARY KEY CHECK (destination ~ '^[a-z][a-z0-9_]*$'),
  consumer_name                   text        NOT NULL CHECK (consumer_name ~ '^[a-z][a-z0-9_]*$'),
  expected_receipt_type           text        NOT NULL CHECK (expected_receipt_type ~ '^[A-Za-z][A-Za-z0-9]*$'),
  expected_receipt_schema_version text        NOT NULL CHECK (expected_receipt_schema_version <> ''),
  projection_target_state         text        NOT NULL CHECK (projection_target_state IN ('not_applicable', 'required')),
  bound_at                        timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT destination_bindings_one_consumer UNIQUE (consumer_name),
  -- the target of the members' foreign key
  CONSTRAINT destination_bindings_member UNIQUE (destination, consumer_name, expected_receipt_type,
    expected_receipt_schema_version, projection_target_state)
);

-- Projection versions and the active pointer per projection (DS-8). A
-- version must be marked ready before a cutover may point at it.
CREATE TABLE outbox.projection_versions (
  projection_name     text        NOT NULL CHECK (projection_name ~ '^[a-z][a-z0-9_.-]*$'),
  projection_version  bigint      NOT NULL CHECK (projection_version >= 1),
  registered_at       timestamptz NOT NULL DEFAULT now(),
  ready_at            timestamptz,
  readiness_proof_ref text,
  PRIMARY KEY (projection_name, projection_version),
  CONSTRAINT projection_versions_ready_proof CHECK ((ready_at IS NULL) = (readiness_proof_ref IS NULL))
);

CREATE TABLE outbox.projection_pointers (
  projection_name      text        NOT NULL PRIMARY KEY,
  projection_version   bigint      NOT NULL,
  delivery_set_version bigint      NOT NULL,
  switched_at          timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (projection_name, projection_version) REFERENCES outbox.projection_versions
);

-- Registered Delivery Set Definitions (DS-6). The definition quadruple is
-- immutable; status, activated_at and retired_at are registry metadata, not
-- part of the definition.
CREATE TABLE outbox.delivery_set_versions (
  delivery_set_version                             bigint      NOT NULL PRIMARY KEY CHECK (delivery_set_version >= 1),
  delivery_set_definition_schema_version           text        NOT NULL CHECK (delivery_set_definition_schema_version <> ''),
  delivery_set_definition_digest_algorithm_version text        NOT NULL CHECK (delivery_set_definition_digest_algorithm_version = 'jcs-sha256-v1'),
  delivery_set_definition_digest                   text        NOT NULL CHECK (delivery_set_definition_digest ~ '^[0-9a-f]{64}$'),
  status                                           text        NOT NULL DEFAULT 'registered'
                                                               CHECK (status IN ('registered', 'active', 'retired')),
  activated_at                                     timestamptz,
  retired_at                                       timestamptz,
  source_release                                   text,
  applicable_event_count                           integer     NOT NULL CHECK (applicable_event_count >= 0),
  -- sorted [{eventType, eventSchemaVersion}], as in the definition
  applicable_events                                jsonb       NOT NULL CHECK (jsonb_typeof(applicable_events) = 'array'),
  member_count                                     integer     NOT NULL CHECK (member_count >= 0),
  -- RFC 8785 canonical bytes of the whole definition (digest included)
  definition_canonical_json                        text        NOT NULL,
  registered_at                                    timestamptz NOT NULL DEFAULT now(),
  registered_txid                                  xid8        NOT NULL DEFAULT pg_current_xact_id(),
  CONSTRAINT delivery_set_versions_quadruple UNIQUE (delivery_set_version, delivery_set_definition_schema_version,
    delivery_set_definition_digest_algorithm_version, delivery_set_definition_digest),
  CONSTRAINT delivery_set_versions_active_has_time CHECK (status <> 'active' OR activated_at IS NOT NULL),
  CONSTRAINT delivery_set_versions_retired_has_time CHECK ((status = 'retired') = (retired_at IS NOT NULL))
);

-- At most one active definition per producer database.
CREATE UNIQUE INDEX delivery_set_versions_one_active ON outbox.delivery_set_versions ((true)) WHERE status = 'active';

ALTER TABLE outbox.projection_pointers
  ADD FOREIGN KEY (delivery_set_version) REFERENCES outbox.delivery_set_versions;

-- Frozen members of a definition (DS-1..DS-4). One (event pair,
-- destination) maps to exactly one consumer: the primary key.
CREATE TABLE outbox.delivery_set_members (
  delivery_set_version            bigint  NOT NULL REFERENCES outbox.delivery_set_versions,
  event_type                      text    NOT NULL,
  schema_version                  text    NOT NULL,
  destination                     text    NOT NULL,
  consumer_name                   text    NOT NULL,
  mandatory                       boolean NOT NULL,
  expected_receipt_type           text    NOT NULL,
  expected_receipt_schema_version text    NOT NULL,
  projection_target_state         text    NOT NULL CHECK (projection_target_state IN ('not_applicable', 'required')),
  projection_name                 text,
  projection_version              bigint  CHECK (projection_version >= 1),
  registered_txid                 xid8    NOT NULL DEFAULT pg_current_xact_id(),
  PRIMARY KEY (delivery_set_version, event_type, schema_version, destination),
  CONSTRAINT delivery_set_members_projection_branch CHECK (
    CASE projection_target_state
      WHEN 'required' THEN projection_name IS NOT NULL AND projection_version IS NOT NULL
      ELSE projection_name IS NULL AND projection_version IS NULL
    END),
  -- DS-4: a member binds exactly its destination's consumer, receipt
  -- contract and projection branch.
  CONSTRAINT delivery_set_members_binding FOREIGN KEY (destination, consumer_name, expected_receipt_type,
    expected_receipt_schema_version, projection_target_state)
    REFERENCES outbox.destination_bindings (destination, consumer_name, expected_receipt_type,
      expected_receipt_schema_version, projection_target_state)
);

-- Immutable events (OB-STORE-2, OB-APPEND-1). event_envelope holds the RFC
-- 8785 canonical bytes of CanonicalEventEnvelope@1 (payload included) that
-- event_envelope_sha256 covers; event_payload is the payload as jsonb for
-- queries only and is never used to compute a digest.
CREATE TABLE outbox.outbox_events (
  event_id                                         uuid        NOT NULL PRIMARY KEY,
  event_type                                       text        NOT NULL,
  schema_version                                   text        NOT NULL,
  delivery_set_version                             bigint      NOT NULL,
  delivery_set_definition_schema_version           text        NOT NULL,
  delivery_set_definition_digest_algorithm_version text        NOT NULL,
  delivery_set_definition_digest                   text        NOT NULL,
  aggregate_type                                   text        NOT NULL,
  aggregate_id                                     text        NOT NULL,
  aggregate_revision                               bigint      NOT NULL CHECK (aggregate_revision >= 1),
  tenant_kind                                      text        NOT NULL,
  tenant_id                                        text        NOT NULL,
  workspace_id                                     text        NOT NULL,
  project_id                                       text,
  correlation_id                                   text        NOT NULL,
  causation_id                                     text,
  operation_id                                     text,
  event_envelope                                   text        NOT NULL,
  event_payload                                    jsonb       NOT NULL,
  event_envelope_digest_algorithm_version          text        NOT NULL CHECK (event_envelope_digest_algorithm_version = 'jcs-sha256-v1'),
  event_envelope_sha256                            text        NOT NULL CHECK (event_envelope_sha256 ~ '^[0-9a-f]{64}$'),
  occurred_at                                      timestamptz NOT NULL,
  created_at                                       timestamptz NOT NULL DEFAULT now(),
  published_at                                     timestamptz,
  -- top-level transaction that inserted the event: delivery rows may only be
  -- created in that same transaction (see outbox.deliveries_before_insert).
  created_txid                                     xid8        NOT NULL DEFAULT pg_current_xact_id(),
  CONSTRAINT outbox_events_definition FOREIGN KEY (delivery_set_version, delivery_set_definition_schema_version,
    delivery_set_definition_digest_algorithm_version, delivery_set_definition_digest)
    REFERENCES outbox.delivery_set_versions (delivery_set_version, delivery_set_definition_schema_version,
      delivery_set_definition_digest_algorithm_version, delivery_set_definition_digest),
  CONSTRAINT outbox_events_published_after_created CHECK (published_at IS NULL OR published_at >= created_at)
);

CREATE INDEX outbox_events_unpublished ON outbox.outbox_events (created_at) WHERE published_at IS NULL;
CREATE INDEX outbox_events_aggregate ON outbox.outbox_events (aggregate_type, aggregate_id, aggregate_revision);

-- Per-destination delivery state (OB-STORE-3). The identity and expectation
-- columns are frozen from the member at append; the state columns belong to
-- the dispatcher.
CREATE TABLE outbox.outbox_deliveries (
  event_id                                    uuid        NOT NULL REFERENCES outbox.outbox_events,
  delivery_set_version                        bigint      NOT NULL,
  destination                                 text        NOT NULL,
  consumer_name                               text        NOT NULL,
  expected_receipt_type                       text        NOT NULL,
  expected_receipt_schema_version             text        NOT NULL,
  required_projection_name                    text,
  required_projection_version                 bigint,
  mandatory                                   boolean     NOT NULL,
  status                                      text        NOT NULL DEFAULT 'pending',
  available_at                                timestamptz NOT NULL DEFAULT now(),
  created_at                                  timestamptz NOT NULL DEFAULT now(),
  lease_owner                                 text,
  lease_token                                 uuid,
  lease_expires_at                            timestamptz,
  current_attempt_id                          uuid,
  attempt_count                               integer     NOT NULL DEFAULT 0 CHECK (attempt_count >= 0),
  last_attempt_at                             timestamptz,
  delivered_at                                timestamptz,
  last_error_code                             text,
  last_error_ref                              text,
  ack_consumer_name                           text,
  ack_receipt_type                            text,
  ack_receipt_key                             text,
  ack_receipt_schema_version                  text,
  ack_receipt_digest_algorithm_version        text,
  ack_receipt_digest                          text,
  ack_event_envelope_digest_algorithm_version text,
  ack_event_envelope_sha256                   text,
  PRIMARY KEY (event_id, destination),
  CONSTRAINT outbox_deliveries_status CHECK (status IN ('pending', 'leased', 'acknowledged', 'quarantined')),
  CONSTRAINT outbox_deliveries_projection CHECK ((required_projection_name IS NULL) = (required_projection_version IS NULL)),
  CONSTRAINT outbox_deliveries_leased_has_lease CHECK (status <> 'leased' OR (lease_owner IS NOT NULL
    AND lease_token IS NOT NULL AND lease_expires_at IS NOT NULL AND current_attempt_id IS NOT NULL)),
  -- An acknowledged delivery carries the full frozen ack; nothing else does.
  CONSTRAINT outbox_deliveries_ack_complete CHECK (
    CASE WHEN status = 'acknowledged' THEN
      ack_consumer_name IS NOT NULL AND ack_receipt_type IS NOT NULL AND ack_receipt_key IS NOT NULL
      AND ack_receipt_schema_version IS NOT NULL AND ack_receipt_digest_algorithm_version IS NOT NULL
      AND ack_receipt_digest IS NOT NULL AND ack_event_envelope_digest_algorithm_version IS NOT NULL
      AND ack_event_envelope_sha256 IS NOT NULL AND delivered_at IS NOT NULL
    ELSE
      num_nonnulls(ack_consumer_name, ack_receipt_type, ack_receipt_key, ack_receipt_schema_version,
        ack_receipt_digest_algorithm_version, ack_receipt_digest, ack_event_envelope_digest_algorithm_version,
        ack_event_envelope_sha256, delivered_at) = 0
    END),
  CONSTRAINT outbox_deliveries_ack_matches_member CHECK (/* guard OB-STORE-6.ack-matches-member */
    (ack_consumer_name IS NULL OR ack_consumer_name = consumer_name)
    AND (ack_receipt_type IS NULL OR ack_receipt_type = expected_receipt_type)
    AND (ack_receipt_schema_version IS NULL OR ack_receipt_schema_version = expected_receipt_schema_version)),
  CONSTRAINT outbox_deliveries_ack_digests CHECK (
    (ack_receipt_digest_algorithm_version IS NULL OR ack_receipt_digest_algorithm_version = 'jcs-sha256-v1')
    AND (ack_receipt_digest IS NULL OR ack_receipt_digest ~ '^[0-9a-f]{64}$')
    AND (ack_event_envelope_digest_algorithm_version IS NULL OR ack_event_envelope_digest_algorithm_version = 'jcs-sha256-v1')
    AND (ack_event_envelope_sha256 IS NULL OR ack_event_envelope_sha256 ~ '^[0-9a-f]{64}$'))
);

-- Claim (OB-CLAIM-1) as an ordered index scan that stops at LIMIT: one
-- range per destination on (destination, available_at, created_at,
-- event_id) over pending rows only; the dispatcher walks its destinations
-- with a LATERAL join and merges. (A destination-less index made the
-- planner bitmap-scan and sort the whole pending backlog per claim.)
CREATE INDEX outbox_deliveries_claim_pending ON outbox.outbox_deliveries (destination, available_at, created_at, event_id)
  WHERE status = 'pending';
CREATE INDEX outbox_deliveries_claim_leased ON outbox.outbox_deliveries (lease_expires_at)
  WHERE status = 'leased';

-- Attempt lifecycle (OB-STORE-4): an immutable start ...
CREATE TABLE outbox.outbox_delivery_attempt_starts (
  attempt_id  uuid        NOT NULL PRIMARY KEY,
  destination text        NOT NULL,
  event_id    uuid        NOT NULL,
  lease_token uuid        NOT NULL,
  started_at  timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT outbox_delivery_attempt_starts_token UNIQUE (lease_token),
  FOREIGN KEY (event_id, destination) REFERENCES outbox.outbox_deliveries (event_id, destination)
);
CREATE INDEX outbox_delivery_attempt_starts_delivery ON outbox.outbox_delivery_attempt_starts (event_id, destination);

-- ... and at most one finish per start: the primary key is the foreign key.
-- outcome: acknowledged | retryable | non_retryable | lease_expired_unknown.
-- retry_disposition says what the finish did to the delivery:
--   none            (acknowledged: terminal)
--   retry_scheduled (retryable: back to pending, available_at moved)
--   quarantined     (non_retryable, or retryable/expired past a configured limit)
--   reclaimable     (lease_expired_unknown: the expired lease may be claimed again)
CREATE TABLE outbox.outbox_delivery_attempt_finishes (
  attempt_id            uuid        NOT NULL PRIMARY KEY REFERENCES outbox.outbox_delivery_attempt_starts,
  finished_at           timestamptz NOT NULL DEFAULT now(),
  outcome               text        NOT NULL,
  retry_disposition     text        NOT NULL,
  normalized_error_code text,
  sanitized_error_ref   text,
  CONSTRAINT outbox_delivery_attempt_finishes_outcome
    CHECK (outcome IN ('acknowledged', 'retryable', 'non_retryable', 'lease_expired_unknown')),
  CONSTRAINT outbox_delivery_attempt_finishes_disposition CHECK ((outcome, retry_disposition) IN (
    ('acknowledged', 'none'),
    ('retryable', 'retry_scheduled'), ('retryable', 'quarantined'),
    ('non_retryable', 'quarantined'),
    ('lease_expired_unknown', 'reclaimable'), ('lease_expired_unknown', 'quarantined'))),
  CONSTRAINT outbox_delivery_attempt_finishes_error CHECK (outcome <> 'acknowledged' OR
    (normalized_error_code IS NULL AND sanitized_error_ref IS NULL))
);

-- Quarantine is an explicit row (OB-STORE-5), one per delivery.
CREATE TABLE outbox.outbox_quarantine (
  destination                             text        NOT NULL,
  event_id                                uuid        NOT NULL,
  reason                                  text        NOT NULL CHECK (reason <> ''),
  event_envelope_digest_algorithm_version text        NOT NULL,
  event_envelope_sha256                   text        NOT NULL,
  quarantined_at                          timestamptz NOT NULL DEFAULT now(),
  acknowledged_at                         timestamptz,
  case_id                                 text,
  attempt_id                              uuid        REFERENCES outbox.outbox_delivery_attempt_starts,
  PRIMARY KEY (event_id, destination),
  FOREIGN KEY (event_id, destination) REFERENCES outbox.outbox_deliveries (event_id, destination)
);

-- The queue tables churn fast: analyze and vacuum them at 2 % change, not
-- the default 10-20 %, so the claim plans see current statistics.
ALTER TABLE outbox.outbox_deliveries SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);
ALTER TABLE outbox.outbox_delivery_attempt_starts SET (autovacuum_analyze_scale_factor = 0.02);
ALTER TABLE outbox.outbox_delivery_attempt_finishes SET (autovacuum_analyze_scale_factor = 0.02);
-- +goose StatementEnd
