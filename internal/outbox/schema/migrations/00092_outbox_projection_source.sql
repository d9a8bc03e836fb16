-- Read view: the source of a projection rebuild (DS-8, shadow rebuild).
--
-- Every event whose frozen definition routes it to a member that requires a
-- projection, with the canonical envelope exactly as stored, its envelope
-- digest, the frozen definition quadruple and the frozen member. A shadow
-- build feeds these events through the same projector code as the
-- dispatcher; the cutover freezes its candidate from it. Like the views of
-- 00090 it names every column explicitly; a reader line grants its own role
-- SELECT on it (internal/operations/schema/migrations/00003_*).

-- +goose Up
-- +goose StatementBegin
CREATE VIEW outbox.projection_source_events AS
SELECT e.event_id,
       e.event_type,
       e.schema_version AS event_schema_version,
       e.event_envelope,
       e.event_envelope_digest_algorithm_version,
       e.event_envelope_sha256,
       e.delivery_set_version,
       e.delivery_set_definition_schema_version,
       e.delivery_set_definition_digest_algorithm_version,
       e.delivery_set_definition_digest,
       e.created_at,
       m.destination,
       m.consumer_name,
       m.expected_receipt_type,
       m.expected_receipt_schema_version,
       m.mandatory,
       m.projection_name,
       m.projection_version
  FROM outbox.outbox_events e
  JOIN outbox.delivery_set_members m
    ON m.delivery_set_version = e.delivery_set_version AND m.event_type = e.event_type
   AND m.schema_version = e.schema_version
 WHERE m.projection_target_state = 'required';
-- +goose StatementEnd
