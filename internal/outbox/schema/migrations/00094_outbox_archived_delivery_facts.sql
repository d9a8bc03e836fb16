-- The completeness source keeps archived history (RET-1, OPS-4).
--
-- outbox.delivery_facts (00090) is the source set of the Operations
-- completeness proof and of the admin's delivery completeness. A retention
-- run (00093, outbox.retention_archive) removes closed history from the hot
-- tables and records, per archived event and delivery, the logical source
-- (event id, pair, envelope digest, frozen member, ack receipt key and
-- digest) in outbox.archived_events / outbox.archived_deliveries. The view
-- adds those rows with the same columns in the same order, so the proof's
-- source events, mandatory deliveries, fingerprints and receipt anti-join
-- are the same before and after a run: the archived range stays part of the
-- approved source view, never a gap and never forgotten. (Numbered after
-- 00090, which creates the view; the rest of retention is 00093.)

-- +goose Up
-- +goose StatementBegin
-- Hot and archived rows never share an event id (00093: the function
-- moves an event; OWR03 refuses appending an archived id again).
CREATE OR REPLACE VIEW outbox.delivery_facts AS
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
  JOIN outbox.outbox_events e ON e.event_id = d.event_id
UNION ALL
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
       e.schema_version,
       e.event_envelope_digest_algorithm_version,
       e.event_envelope_sha256
  FROM outbox.archived_deliveries d
  JOIN outbox.archived_events e ON e.event_id = d.event_id;

-- +goose StatementEnd
