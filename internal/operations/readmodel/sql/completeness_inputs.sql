-- name: CompletenessInputs
-- Every input of the complete_for_supported_scope proof (OPS-4), read in the
-- caller's one consistent snapshot (REPEATABLE READ): the core_operations
-- source events and mandatory deliveries of the core outbox, the receipts of
-- the projection target, the receipt anti-join, unresolved revision gaps,
-- unsupported schema records and the semantic check. Each set comes with its
-- count and a guard fingerprint (SHA-256 over the sorted row texts; an
-- internal comparison value, not a contract digest).
-- $1 projection name, $2 projection version.
WITH src AS (
  SELECT e.event_id::text AS event_id, e.event_type, e.schema_version,
         e.event_envelope_digest_algorithm_version AS alg, e.event_envelope_sha256 AS sha,
         d.status, d.required_projection_name, d.required_projection_version,
         d.ack_receipt_key, d.ack_receipt_digest
    FROM outbox.outbox_deliveries d
    JOIN outbox.outbox_events e ON e.event_id = d.event_id
   WHERE d.destination = 'core_operations' AND d.mandatory
), rcpt AS (
  SELECT r.event_id::text AS event_id, r.event_envelope_digest_algorithm_version AS alg,
         r.event_envelope_sha256 AS sha, r.receipt_ref, r.receipt_digest
    FROM operations.applied_receipts r
   WHERE r.consumer_name = 'operations_projector' AND r.projection_name = $1 AND r.projection_version = $2
), mut AS (
  SELECT e.event_id::text AS event_id, e.aggregate_type, e.aggregate_id
    FROM operations.projected_events e
   WHERE e.projection_name = $1 AND e.projection_version = $2
), gaps AS (
  SELECT g.waiting_event_id::text AS event_id, g.aggregate_type, g.aggregate_id, g.waiting_revision
    FROM operations.revision_gaps g
   WHERE g.projection_name = $1 AND g.projection_version = $2 AND g.resolved_at IS NULL
), unsupported AS (
  SELECT u.event_id::text AS event_id, u.event_type, u.event_schema_version
    FROM operations.unsupported_events u
   WHERE u.projection_name = $1 AND u.projection_version = $2 AND u.resolved_at IS NULL
)
SELECT
  (SELECT count(*) FROM src),
  (SELECT encode(sha256(convert_to(COALESCE(string_agg(concat_ws('|', event_id, event_type, schema_version, alg, sha), E'\n' ORDER BY event_id), ''), 'UTF8')), 'hex') FROM src),
  (SELECT encode(sha256(convert_to(COALESCE(string_agg(concat_ws('|', event_id, status, required_projection_name, required_projection_version, ack_receipt_key, ack_receipt_digest), E'\n' ORDER BY event_id), ''), 'UTF8')), 'hex') FROM src),
  (SELECT count(*) FROM src WHERE status IN ('pending', 'leased')),
  (SELECT count(*) FROM src WHERE status = 'quarantined'),
  (SELECT count(*) FROM rcpt),
  (SELECT encode(sha256(convert_to(COALESCE(string_agg(concat_ws('|', event_id, alg, sha, receipt_ref, receipt_digest), E'\n' ORDER BY event_id), ''), 'UTF8')), 'hex') FROM rcpt),
  -- receipt anti-join: source events without a receipt for this version and envelope digest
  (SELECT count(*) FROM src s WHERE NOT EXISTS (SELECT 1 FROM rcpt r WHERE r.event_id = s.event_id AND r.alg = s.alg AND r.sha = s.sha)),
  (SELECT count(*) FROM gaps),
  (SELECT encode(sha256(convert_to(COALESCE(string_agg(concat_ws('|', event_id, aggregate_type, aggregate_id, waiting_revision), E'\n' ORDER BY event_id), ''), 'UTF8')), 'hex') FROM gaps),
  (SELECT count(*) FROM unsupported),
  (SELECT encode(sha256(convert_to(COALESCE(string_agg(concat_ws('|', event_id, event_type, event_schema_version), E'\n' ORDER BY event_id), ''), 'UTF8')), 'hex') FROM unsupported),
  -- semantic check
  (SELECT count(*) FROM operations.pending_unlinked_reservations p
    WHERE p.projection_name = $1 AND p.projection_version = $2 AND p.status = 'pending'),
  (SELECT count(*) FROM rcpt r WHERE NOT EXISTS (SELECT 1 FROM mut m WHERE m.event_id = r.event_id)),
  (SELECT count(*) FROM mut m WHERE NOT EXISTS (SELECT 1 FROM rcpt r WHERE r.event_id = m.event_id)),
  (SELECT count(*) FROM rcpt r WHERE NOT EXISTS (SELECT 1 FROM src s WHERE s.event_id = r.event_id)),
  (SELECT count(*) FROM operations.projection_aggregates a
    WHERE a.projection_name = $1 AND a.projection_version = $2
      AND a.applied_revision <> (SELECT count(*) FROM mut m WHERE m.aggregate_type = a.aggregate_type AND m.aggregate_id = a.aggregate_id)),
  (SELECT count(*) FROM operations.operation_summaries s
    WHERE s.projection_name = $1 AND s.projection_version = $2 AND s.reservation_state = 'source_delayed'
      AND EXISTS (SELECT 1 FROM mut m WHERE m.aggregate_type = 'billing_reservation' AND m.aggregate_id = s.billing_reservation_id::text))
