-- The completeness inputs statement as it was before the linear rewrite
-- (CTEs, nested-loop anti-joins): kept only as the oracle of
-- TestOPS4CompletenessInputsEqualCTEReference, which proves the rewrite
-- returns the same row (so the same fingerprints and inputs digest).
--
-- Every input of the complete_for_supported_scope proof (OPS-4), read in the
-- caller's one consistent snapshot (REPEATABLE READ): the core_operations
-- source events and mandatory deliveries of the core outbox, the receipts of
-- the projection target, the receipt anti-join, unresolved revision gaps,
-- unsupported schema records and the semantic check. Each set comes with its
-- count and a guard fingerprint (SHA-256 over the sorted row texts; an
-- internal comparison value, not a contract digest). The outbox side is
-- read through the outbox-owned view outbox.delivery_facts (00090), never
-- the outbox tables. Loaded, not sqlc: a wide row of scalar subqueries,
-- read by column name into completenessRow.
WITH src AS (
  SELECT f.event_id::text AS event_id, f.event_type, f.event_schema_version AS schema_version,
         f.event_envelope_digest_algorithm_version AS alg, f.event_envelope_sha256 AS sha,
         f.status, f.required_projection_name, f.required_projection_version,
         f.ack_receipt_key, f.ack_receipt_digest
    FROM outbox.delivery_facts f
   WHERE f.destination = 'core_operations' AND f.mandatory
), dlv AS (
  -- The proof's delivery scope: the mandatory deliveries whose frozen
  -- projection target is the version being proved (DS-8: a delivery frozen
  -- to another version converges to that version and is its proof's
  -- concern, never this one's).
  SELECT * FROM src
   WHERE required_projection_name = @projection_name AND required_projection_version = @projection_version
), rcpt AS (
  SELECT r.event_id::text AS event_id, r.event_envelope_digest_algorithm_version AS alg,
         r.event_envelope_sha256 AS sha, r.receipt_ref, r.receipt_digest
    FROM operations.applied_receipts r
   WHERE r.consumer_name = 'operations_projector' AND r.projection_name = @projection_name AND r.projection_version = @projection_version
), mut AS (
  SELECT e.event_id::text AS event_id, e.aggregate_type, e.aggregate_id
    FROM operations.projected_events e
   WHERE e.projection_name = @projection_name AND e.projection_version = @projection_version
), gaps AS (
  SELECT g.waiting_event_id::text AS event_id, g.aggregate_type, g.aggregate_id, g.waiting_revision
    FROM operations.revision_gaps g
   WHERE g.projection_name = @projection_name AND g.projection_version = @projection_version AND g.resolved_at IS NULL
), unsupported AS (
  SELECT u.event_id::text AS event_id, u.event_type, u.event_schema_version
    FROM operations.unsupported_events u
   WHERE u.projection_name = @projection_name AND u.projection_version = @projection_version AND u.resolved_at IS NULL
)
SELECT
  (SELECT count(*) FROM src) AS source_events_count,
  (SELECT encode(sha256(convert_to(COALESCE(string_agg(concat_ws('|', event_id, event_type, schema_version, alg, sha), E'\n' ORDER BY event_id), ''), 'UTF8')), 'hex') FROM src) AS source_events_fingerprint,
  (SELECT count(*) FROM dlv) AS mandatory_deliveries_count,
  (SELECT encode(sha256(convert_to(COALESCE(string_agg(concat_ws('|', event_id, status, required_projection_name, required_projection_version, ack_receipt_key, ack_receipt_digest), E'\n' ORDER BY event_id), ''), 'UTF8')), 'hex') FROM dlv) AS mandatory_deliveries_fingerprint,
  (SELECT count(*) FROM dlv WHERE status IN ('pending', 'leased')) AS open_deliveries,
  (SELECT count(*) FROM dlv WHERE status = 'quarantined') AS quarantined_deliveries,
  (SELECT count(*) FROM rcpt) AS receipts_count,
  (SELECT encode(sha256(convert_to(COALESCE(string_agg(concat_ws('|', event_id, alg, sha, receipt_ref, receipt_digest), E'\n' ORDER BY event_id), ''), 'UTF8')), 'hex') FROM rcpt) AS receipts_fingerprint,
  -- receipt anti-join: source events without a receipt for this version and envelope digest
  (SELECT count(*) FROM src s WHERE NOT EXISTS (SELECT 1 FROM rcpt r WHERE r.event_id = s.event_id AND r.alg = s.alg AND r.sha = s.sha)) AS missing_receipts,
  (SELECT count(*) FROM gaps) AS unresolved_gaps_count,
  (SELECT encode(sha256(convert_to(COALESCE(string_agg(concat_ws('|', event_id, aggregate_type, aggregate_id, waiting_revision), E'\n' ORDER BY event_id), ''), 'UTF8')), 'hex') FROM gaps) AS unresolved_gaps_fingerprint,
  (SELECT count(*) FROM unsupported) AS unsupported_events_count,
  (SELECT encode(sha256(convert_to(COALESCE(string_agg(concat_ws('|', event_id, event_type, event_schema_version), E'\n' ORDER BY event_id), ''), 'UTF8')), 'hex') FROM unsupported) AS unsupported_events_fingerprint,
  -- semantic check
  (SELECT count(*) FROM operations.pending_unlinked_reservations p
    WHERE p.projection_name = @projection_name AND p.projection_version = @projection_version AND p.status = 'pending') AS pending_unlinked_reservations,
  (SELECT count(*) FROM rcpt r WHERE NOT EXISTS (SELECT 1 FROM mut m WHERE m.event_id = r.event_id)) AS receipts_without_mutation,
  (SELECT count(*) FROM mut m WHERE NOT EXISTS (SELECT 1 FROM rcpt r WHERE r.event_id = m.event_id)) AS mutations_without_receipt,
  (SELECT count(*) FROM rcpt r WHERE NOT EXISTS (SELECT 1 FROM src s WHERE s.event_id = r.event_id)) AS receipts_without_source,
  (SELECT count(*) FROM operations.projection_aggregates a
    WHERE a.projection_name = @projection_name AND a.projection_version = @projection_version
      AND a.applied_revision <> (SELECT count(*) FROM mut m WHERE m.aggregate_type = a.aggregate_type AND m.aggregate_id = a.aggregate_id)) AS aggregate_revision_mismatch,
  (SELECT count(*) FROM operations.operation_summaries s
    WHERE s.projection_name = @projection_name AND s.projection_version = @projection_version AND s.reservation_state = 'source_delayed'
      AND EXISTS (SELECT 1 FROM mut m WHERE m.aggregate_type = 'billing_reservation' AND m.aggregate_id = s.billing_reservation_id::text)) AS missed_links
