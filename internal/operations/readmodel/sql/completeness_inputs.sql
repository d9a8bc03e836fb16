-- name: CompletenessInputs
-- Every input of the complete_for_supported_scope proof (OPS-4), read in the
-- caller's one consistent snapshot (REPEATABLE READ; one statement): the
-- core_operations source events and mandatory deliveries of the core outbox,
-- the receipts of the projection target, the receipt anti-join, unresolved
-- revision gaps, unsupported schema records and the semantic check. Each set
-- comes with its count and a guard fingerprint (SHA-256 over the rows' texts
-- sorted by event id text; an internal comparison value, not a contract
-- digest). The outbox side is read through the outbox-owned view
-- outbox.delivery_facts (00090, 00094), never the outbox tables. Loaded, not
-- sqlc: a wide row read by column name into completenessRow.
--
-- Linear in history: each set is one aggregate over its own base rows (no
-- CTE: a CTE scanned more than once is materialized without statistics,
-- and the planner then ran the anti-joins as nested loops over two growing
-- sets, quadratic: 18 s at 4,000 events, 79 s at 9,850). Every comparison
-- of two sets is a FULL JOIN on uuid keys that are unique on the side that
-- must match (primary keys), counted with FILTER: PostgreSQL runs a full
-- join only as a hash or merge join, never a nested loop, whatever the
-- statistics say (tables are often unanalyzed right after a burst). The
-- aggregate revision check counts the projected events per aggregate once,
-- grouped, instead of a subquery per aggregate. The row texts and their
-- order are unchanged, so the fingerprints and the inputs digest are the
-- same for the same data (TestOPS4CompletenessInputsEqualCTEReference).
SELECT src.source_events_count, src.source_events_fingerprint,
       dlv.mandatory_deliveries_count, dlv.mandatory_deliveries_fingerprint,
       dlv.open_deliveries, dlv.quarantined_deliveries,
       rcpt.receipts_count, rcpt.receipts_fingerprint,
       anti.missing_receipts,
       gaps.unresolved_gaps_count, gaps.unresolved_gaps_fingerprint,
       unsupported.unsupported_events_count, unsupported.unsupported_events_fingerprint,
       sem_pending.pending_unlinked_reservations,
       sem_receipts.receipts_without_mutation, sem_receipts.mutations_without_receipt, anti.receipts_without_source,
       sem_revisions.aggregate_revision_mismatch, sem_links.missed_links
  FROM (
    -- source events: every mandatory core_operations delivery, hot and archived
    SELECT count(*) AS source_events_count,
           encode(sha256(convert_to(COALESCE(string_agg(concat_ws('|', f.event_id::text, f.event_type, f.event_schema_version,
                    f.event_envelope_digest_algorithm_version, f.event_envelope_sha256), E'\n' ORDER BY f.event_id::text), ''), 'UTF8')), 'hex') AS source_events_fingerprint
      FROM outbox.delivery_facts f
     WHERE f.destination = 'core_operations' AND f.mandatory
  ) src
 CROSS JOIN (
    -- The proof's delivery scope: the mandatory deliveries whose frozen
    -- projection target is the version being proved (DS-8: a delivery frozen
    -- to another version converges to that version and is its proof's
    -- concern, never this one's).
    SELECT count(*) AS mandatory_deliveries_count,
           encode(sha256(convert_to(COALESCE(string_agg(concat_ws('|', f.event_id::text, f.status, f.required_projection_name,
                    f.required_projection_version, f.ack_receipt_key, f.ack_receipt_digest), E'\n' ORDER BY f.event_id::text), ''), 'UTF8')), 'hex') AS mandatory_deliveries_fingerprint,
           count(*) FILTER (WHERE f.status IN ('pending', 'leased')) AS open_deliveries,
           count(*) FILTER (WHERE f.status = 'quarantined') AS quarantined_deliveries
      FROM outbox.delivery_facts f
     WHERE f.destination = 'core_operations' AND f.mandatory
       AND f.required_projection_name = @projection_name AND f.required_projection_version = @projection_version
  ) dlv
 CROSS JOIN (
    SELECT count(*) AS receipts_count,
           encode(sha256(convert_to(COALESCE(string_agg(concat_ws('|', r.event_id::text, r.event_envelope_digest_algorithm_version,
                    r.event_envelope_sha256, r.receipt_ref, r.receipt_digest), E'\n' ORDER BY r.event_id::text), ''), 'UTF8')), 'hex') AS receipts_fingerprint
      FROM operations.applied_receipts r
     WHERE r.consumer_name = 'operations_projector' AND r.projection_name = @projection_name AND r.projection_version = @projection_version
  ) rcpt
 CROSS JOIN (
    -- receipt anti-join: source events without a receipt for this version and
    -- envelope digest; and receipts of events that are not in the source.
    -- Receipts are unique per event id (primary key), so every source row
    -- meets at most one receipt and each side is counted exactly once.
    SELECT count(*) FILTER (WHERE s.event_id IS NOT NULL AND NOT COALESCE(r.alg = s.alg AND r.sha = s.sha, false)) AS missing_receipts,
           count(*) FILTER (WHERE s.event_id IS NULL) AS receipts_without_source
      FROM (SELECT f.event_id, f.event_envelope_digest_algorithm_version AS alg, f.event_envelope_sha256 AS sha
              FROM outbox.delivery_facts f
             WHERE f.destination = 'core_operations' AND f.mandatory) s
      FULL JOIN (SELECT r.event_id, r.event_envelope_digest_algorithm_version AS alg, r.event_envelope_sha256 AS sha
                   FROM operations.applied_receipts r
                  WHERE r.consumer_name = 'operations_projector' AND r.projection_name = @projection_name
                    AND r.projection_version = @projection_version) r
        ON r.event_id = s.event_id
  ) anti
 CROSS JOIN (
    SELECT count(*) AS unresolved_gaps_count,
           encode(sha256(convert_to(COALESCE(string_agg(concat_ws('|', g.waiting_event_id::text, g.aggregate_type, g.aggregate_id,
                    g.waiting_revision), E'\n' ORDER BY g.waiting_event_id::text), ''), 'UTF8')), 'hex') AS unresolved_gaps_fingerprint
      FROM operations.revision_gaps g
     WHERE g.projection_name = @projection_name AND g.projection_version = @projection_version AND g.resolved_at IS NULL
  ) gaps
 CROSS JOIN (
    SELECT count(*) AS unsupported_events_count,
           encode(sha256(convert_to(COALESCE(string_agg(concat_ws('|', u.event_id::text, u.event_type, u.event_schema_version),
                    E'\n' ORDER BY u.event_id::text), ''), 'UTF8')), 'hex') AS unsupported_events_fingerprint
      FROM operations.unsupported_events u
     WHERE u.projection_name = @projection_name AND u.projection_version = @projection_version AND u.resolved_at IS NULL
  ) unsupported
 -- semantic check
 CROSS JOIN (
    SELECT count(*) AS pending_unlinked_reservations
      FROM operations.pending_unlinked_reservations p
     WHERE p.projection_name = @projection_name AND p.projection_version = @projection_version AND p.status = 'pending'
  ) sem_pending
 CROSS JOIN (
    -- receipt <-> mutation must be 1:1 (both unique per event id)
    SELECT count(*) FILTER (WHERE m.event_id IS NULL) AS receipts_without_mutation,
           count(*) FILTER (WHERE r.event_id IS NULL) AS mutations_without_receipt
      FROM (SELECT r.event_id FROM operations.applied_receipts r
             WHERE r.consumer_name = 'operations_projector' AND r.projection_name = @projection_name
               AND r.projection_version = @projection_version) r
      FULL JOIN (SELECT m.event_id FROM operations.projected_events m
                  WHERE m.projection_name = @projection_name AND m.projection_version = @projection_version) m
        ON m.event_id = r.event_id
  ) sem_receipts
 CROSS JOIN (
    -- applied revision <> number of applied events of the aggregate (none counts as 0)
    SELECT count(*) FILTER (WHERE a.aggregate_id IS NOT NULL AND a.applied_revision <> COALESCE(n.applied_events, 0)) AS aggregate_revision_mismatch
      FROM (SELECT a.aggregate_type, a.aggregate_id, a.applied_revision FROM operations.projection_aggregates a
             WHERE a.projection_name = @projection_name AND a.projection_version = @projection_version) a
      FULL JOIN (SELECT m.aggregate_type, m.aggregate_id, count(*) AS applied_events FROM operations.projected_events m
                  WHERE m.projection_name = @projection_name AND m.projection_version = @projection_version
                  GROUP BY m.aggregate_type, m.aggregate_id) n
        ON n.aggregate_type = a.aggregate_type AND n.aggregate_id = a.aggregate_id
  ) sem_revisions
 CROSS JOIN (
    -- summaries still source_delayed although their wallet event is applied
    SELECT count(*) FILTER (WHERE s.reservation_id IS NOT NULL AND m.aggregate_id IS NOT NULL) AS missed_links
      FROM (SELECT s.billing_reservation_id::text AS reservation_id FROM operations.operation_summaries s
             WHERE s.projection_name = @projection_name AND s.projection_version = @projection_version
               AND s.reservation_state = 'source_delayed') s
      FULL JOIN (SELECT DISTINCT m.aggregate_id FROM operations.projected_events m
                  WHERE m.projection_name = @projection_name AND m.projection_version = @projection_version
                    AND m.aggregate_type = 'billing_reservation') m
        ON m.aggregate_id = s.reservation_id
  ) sem_links
