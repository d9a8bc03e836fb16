-- Read views: the outbox state other lines may read (Operations, the admin).
--
-- Readers outside the outbox never join the outbox tables themselves; they
-- read these views, which name every table and column explicitly. Renaming
-- an outbox column therefore breaks this migration or the column/row pins
-- in internal/outbox/views_test.go, never a reader in production.
--
-- The views run with their owner's privileges. The outbox's own roles read
-- the tables and need no grant here; a reader line grants its own role
-- SELECT on the views it needs (and USAGE on schema outbox), never on the
-- tables (internal/operations/schema/migrations/00002_operations_grants.sql).

-- +goose Up
-- +goose StatementBegin

-- Every delivery with the identity of its event: the source set of a
-- consumer's completeness proof and of the admin's delivery completeness.
CREATE VIEW outbox.delivery_facts AS
SELECT d.event_id,
       d.destination,
       d.consumer_name,
       d.mandatory,
       d.status,
       d.required_projection_name,
       d.required_projection_version,
       d.ack_receipt_key,
       d.ack_receipt_digest,
       e.event_type,
       e.schema_version AS event_schema_version,
       e.event_envelope_digest_algorithm_version,
       e.event_envelope_sha256
  FROM outbox.outbox_deliveries d
  JOIN outbox.outbox_events e ON e.event_id = d.event_id;

-- Every event with the members its frozen definition routes its pair to and
-- the delivery row of each member's destination (none: delivery_* NULL).
-- A consumer binds a directed read to the event's frozen scope with it.
CREATE VIEW outbox.event_frozen_members AS
SELECT e.event_id,
       e.event_type,
       e.schema_version AS event_schema_version,
       e.event_envelope_digest_algorithm_version,
       e.event_envelope_sha256,
       e.delivery_set_version,
       e.delivery_set_definition_schema_version,
       e.delivery_set_definition_digest_algorithm_version,
       e.delivery_set_definition_digest,
       m.destination,
       m.consumer_name,
       m.expected_receipt_type,
       m.expected_receipt_schema_version,
       m.mandatory,
       m.projection_name,
       m.projection_version,
       d.required_projection_name AS delivery_projection_name,
       d.required_projection_version AS delivery_projection_version
  FROM outbox.outbox_events e
  JOIN outbox.delivery_set_members m
    ON m.delivery_set_version = e.delivery_set_version AND m.event_type = e.event_type
   AND m.schema_version = e.schema_version
  LEFT JOIN outbox.outbox_deliveries d ON d.event_id = e.event_id AND d.destination = m.destination;

-- The active version of each projection (DS-8 pointer) and the definition
-- it was switched with.
CREATE VIEW outbox.active_projections AS
SELECT p.projection_name,
       p.projection_version,
       p.delivery_set_version,
       p.switched_at
  FROM outbox.projection_pointers p;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DROP VIEW outbox.active_projections;
DROP VIEW outbox.event_frozen_members;
DROP VIEW outbox.delivery_facts;
-- +goose StatementEnd
