-- PostgreSQL CPU per delivery on the ack path (issue 17, items 2-3): plans
-- made once per session that can only probe, and no re-proof of what the
-- transition guard proved in the same transaction.
--
-- outbox.record_publication_batch (00095) re-planned each of its statements
-- on every call (plan_cache_mode = force_custom_plan), about half of its CPU
-- at ack batches of a few rows. It now keeps one generic plan per session
-- (force_generic_plan) made with enable_seqscan = off: every table access is
-- an equality on a primary key (or a key prefix) or a row id, so a generic
-- plan is a probe whatever the table size was when it was made, and the
-- disabled sequential scan keeps a plan made while a table was a few pages
-- long from reading it whole for as long as the session lives (issue 17).
-- The checks, the row-level answers and the OW009 messages are the same;
-- it runs four statements instead of six (the per-row check, the
-- completeness count and the sibling proof are one), and it no longer reads
-- the attempt start and finish of a delivery whose acknowledged row version
-- this very transaction wrote: outbox.deliveries_prove_transitions (00006)
-- proved, at the end of the statement that wrote it, that its current
-- attempt has an acknowledged finish whose start carries this delivery and
-- its lease token, and that its ack consumer, receipt type and schema
-- version are its frozen member's; outbox.prove_publication (00005) proves
-- its ack envelope digest at COMMIT. Rows acknowledged by an earlier
-- transaction (a retried call, or a sibling) are proven here in full, as
-- before (TestRecordPublicationRequiresProvenSiblings_OBPUB1 forges one with
-- the triggers switched off).
--
-- outbox.deliveries_prove_transitions (00006): its attempt start and finish
-- lookups are lateral primary-key probes under enable_seqscan = off. The
-- trigger's statement has no parameters, so PostgreSQL plans it once per
-- session; a session that planned the joins while the attempt tables were a
-- few pages long read them sequentially for every later claim and ack batch
-- (thousands of tuples per delivery in some tx-1 bench runs, issue 17).
-- The checks and messages are unchanged.
--
-- outbox.ack_delivery_batch (new): the dispatcher's fenced ack batch
-- statement, before sent unprepared and so parsed and planned per batch,
-- with the same settings and fences (SECURITY INVOKER).
--
-- outbox.deliveries_before_update (00002): a terminal delivery takes no
-- UPDATE at all, not even one that changes nothing (OW008), which the
-- same-transaction inference above relies on.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION outbox.record_publication_batch(
  p_event_ids                                    uuid[],
  p_destinations                                 text[],
  p_consumer_names                               text[],
  p_attempt_ids                                  uuid[],
  p_lease_tokens                                 uuid[],
  p_ack_receipt_types                            text[],
  p_ack_receipt_keys                             text[],
  p_ack_receipt_schema_versions                  text[],
  p_ack_receipt_digest_algorithm_versions        text[],
  p_ack_receipt_digests                          text[],
  p_ack_event_envelope_digest_algorithm_versions text[],
  p_ack_event_envelope_sha256s                   text[])
RETURNS TABLE (event_id uuid, destination text, result text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- One plan per statement and session, never a sequential scan (see the
-- header): every access below is a key equality or a row id. No JIT: a
-- probe-only plan never pays for it, and a plan that still held a disabled
-- sequential scan would carry its 1e10 cost and be compiled on every run.
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET jit = off
AS $fn$
DECLARE
  v_n                   int;
  v_unpublished         uuid[];
  v_unpublished_rows    tid[];
  v_complete            uuid[];
  v_bad_event           uuid;
  v_bad_destination     text;
  v_bad_reason          text;
  v_sibling_event       uuid;
  v_sibling_destination text;
BEGIN
  IF /* guard OW013.publication-batch-isolation */ current_setting('transaction_isolation') <> 'read committed' THEN
    RAISE EXCEPTION 'outbox.record_publication_batch runs under READ COMMITTED, not %', current_setting('transaction_isolation')
      USING ERRCODE = 'OW013';
  END IF;
  v_n := cardinality(p_event_ids);
  IF /* guard OW009.publication-batch-arguments */ v_n IS NULL
     OR num_nulls(p_destinations, p_consumer_names, p_attempt_ids, p_lease_tokens, p_ack_receipt_types, p_ack_receipt_keys,
          p_ack_receipt_schema_versions, p_ack_receipt_digest_algorithm_versions, p_ack_receipt_digests,
          p_ack_event_envelope_digest_algorithm_versions, p_ack_event_envelope_sha256s) <> 0
     OR v_n <> ANY (ARRAY[cardinality(p_destinations), cardinality(p_consumer_names), cardinality(p_attempt_ids),
          cardinality(p_lease_tokens), cardinality(p_ack_receipt_types), cardinality(p_ack_receipt_keys),
          cardinality(p_ack_receipt_schema_versions), cardinality(p_ack_receipt_digest_algorithm_versions),
          cardinality(p_ack_receipt_digests), cardinality(p_ack_event_envelope_digest_algorithm_versions),
          cardinality(p_ack_event_envelope_sha256s)])
     OR array_position(p_event_ids, NULL) IS NOT NULL OR array_position(p_destinations, NULL) IS NOT NULL
     OR array_position(p_consumer_names, NULL) IS NOT NULL OR array_position(p_attempt_ids, NULL) IS NOT NULL
     OR array_position(p_lease_tokens, NULL) IS NOT NULL OR array_position(p_ack_receipt_types, NULL) IS NOT NULL
     OR array_position(p_ack_receipt_keys, NULL) IS NOT NULL OR array_position(p_ack_receipt_schema_versions, NULL) IS NOT NULL
     OR array_position(p_ack_receipt_digest_algorithm_versions, NULL) IS NOT NULL
     OR array_position(p_ack_receipt_digests, NULL) IS NOT NULL
     OR array_position(p_ack_event_envelope_digest_algorithm_versions, NULL) IS NOT NULL
     OR array_position(p_ack_event_envelope_sha256s, NULL) IS NOT NULL THEN
    RAISE EXCEPTION 'outbox.record_publication: every argument is required' USING ERRCODE = 'OW009';
  END IF;
  IF v_n = 0 THEN
    RETURN;
  END IF;

  -- Lock the batch's events in event_id order (concurrent batches take them
  -- in one order). A sibling ack committing meanwhile is waited for; the
  -- next statement takes a fresh snapshot and sees it.
  SELECT array_agg(l.event_id) FILTER (WHERE l.published_at IS NULL),
         array_agg(l.row_id) FILTER (WHERE l.published_at IS NULL)
    INTO v_unpublished, v_unpublished_rows
    FROM (SELECT DISTINCT u.event_id FROM unnest(p_event_ids) AS u(event_id) ORDER BY u.event_id) u
    CROSS JOIN LATERAL (SELECT e.event_id, e.published_at, e.ctid AS row_id FROM outbox.outbox_events e
                         WHERE e.event_id = u.event_id FOR NO KEY UPDATE) l;

  -- One statement: every input row checked as the one-ack function checks
  -- it (the first failure in input order wins), then, per event, whether
  -- every mandatory delivery is acknowledged and the first acknowledged
  -- sibling without its proof. A row version this transaction wrote
  -- (xmin) was proven by the transition guard at the end of its statement
  -- (acknowledged finish of the current attempt, start with this delivery
  -- and lease token, ack consumer/receipt type/schema = frozen member) and
  -- its envelope digest is proven at COMMIT (prove_publication): the start
  -- and finish are read only for rows an earlier transaction acknowledged.
  -- Lateral sub-selects with OFFSET 0 are primary-key probes per row that no
  -- plan can turn into a join over a scan.
  WITH i AS (
    SELECT * FROM ROWS FROM (unnest(p_event_ids), unnest(p_destinations), unnest(p_consumer_names), unnest(p_attempt_ids),
             unnest(p_lease_tokens), unnest(p_ack_receipt_types), unnest(p_ack_receipt_keys),
             unnest(p_ack_receipt_schema_versions), unnest(p_ack_receipt_digest_algorithm_versions),
             unnest(p_ack_receipt_digests), unnest(p_ack_event_envelope_digest_algorithm_versions),
             unnest(p_ack_event_envelope_sha256s)) WITH ORDINALITY
           AS i(event_id, destination, consumer_name, attempt_id, lease_token, receipt_type, receipt_key,
                receipt_schema_version, receipt_digest_algorithm_version, receipt_digest,
                envelope_digest_algorithm_version, envelope_sha256, ord)
  ), rowcheck AS (
    SELECT i.event_id, i.destination, i.ord, CASE
        WHEN /* guard OW009.pub-row-unknown-event */ e.event_id IS NULL THEN 'unknown event'
        WHEN /* guard OW009.pub-row-no-delivery */ d.event_id IS NULL THEN 'no delivery'
        WHEN /* guard OW009.pub-row-not-mandatory-member */ m.delivery_set_version IS NULL OR NOT m.mandatory
          THEN 'destination is not a mandatory member of the event''s frozen definition'
        WHEN /* guard OW009.pub-row-other-definition */ d.delivery_set_version <> e.delivery_set_version
          THEN 'delivery and event froze different definitions'
        WHEN /* guard OW009.pub-row-consumer */ i.consumer_name <> m.consumer_name OR d.consumer_name <> m.consumer_name
          THEN 'consumer does not match the frozen destination → consumer mapping'
        WHEN /* guard OW009.pub-row-receipt-type */ i.receipt_type <> m.expected_receipt_type OR i.receipt_schema_version <> m.expected_receipt_schema_version
          OR d.expected_receipt_type <> m.expected_receipt_type OR d.expected_receipt_schema_version <> m.expected_receipt_schema_version
          THEN 'receipt type or schema version does not match the frozen member'
        WHEN /* guard OW009.pub-row-projection */ d.required_projection_name IS DISTINCT FROM m.projection_name
          OR d.required_projection_version IS DISTINCT FROM m.projection_version
          THEN 'delivery projection target does not match the frozen member'
        WHEN /* guard OW009.pub-row-envelope-digest */ i.envelope_digest_algorithm_version <> e.event_envelope_digest_algorithm_version
          OR i.envelope_sha256 <> e.event_envelope_sha256
          THEN 'ack envelope digest does not match the event'
        WHEN /* guard OW009.pub-row-not-acknowledged */ d.status <> 'acknowledged'
          THEN 'delivery is not acknowledged'
        WHEN /* guard OW009.pub-row-other-receipt */ (d.ack_consumer_name, d.ack_receipt_type, d.ack_receipt_key, d.ack_receipt_schema_version,
              d.ack_receipt_digest_algorithm_version, d.ack_receipt_digest,
              d.ack_event_envelope_digest_algorithm_version, d.ack_event_envelope_sha256)
          IS DISTINCT FROM
             (i.consumer_name, i.receipt_type, i.receipt_key, i.receipt_schema_version,
              i.receipt_digest_algorithm_version, i.receipt_digest,
              i.envelope_digest_algorithm_version, i.envelope_sha256)
          THEN 'delivery was acknowledged with other receipt coordinates'
        WHEN /* guard OW009.pub-row-not-current-attempt */ d.current_attempt_id IS DISTINCT FROM i.attempt_id OR d.lease_token IS DISTINCT FROM i.lease_token
          THEN 'attempt or lease token is not the delivery''s current one'
        WHEN d.proven_here THEN NULL
        WHEN /* guard OW009.pub-row-unproven-finish */ ((SELECT s.event_id = i.event_id AND s.destination = i.destination AND s.lease_token = i.lease_token
                 FROM outbox.outbox_delivery_attempt_starts s WHERE s.attempt_id = i.attempt_id)
              AND (SELECT f.outcome FROM outbox.outbox_delivery_attempt_finishes f
                    WHERE f.attempt_id = i.attempt_id) = 'acknowledged') IS NOT TRUE
          THEN 'attempt start with this lease token has no acknowledged finish'
      END AS reason
      FROM i
      LEFT JOIN LATERAL (SELECT e0.event_id, e0.delivery_set_version, e0.event_type, e0.schema_version,
                                e0.event_envelope_digest_algorithm_version, e0.event_envelope_sha256
                           FROM outbox.outbox_events e0 WHERE e0.event_id = i.event_id OFFSET 0) e ON true
      LEFT JOIN LATERAL (SELECT d0.*, coalesce(d0.xmin = pg_current_xact_id_if_assigned()::xid, false) AS proven_here
                           FROM outbox.outbox_deliveries d0
                          WHERE d0.event_id = i.event_id AND d0.destination = i.destination OFFSET 0) d ON true
      LEFT JOIN LATERAL (SELECT m0.* FROM outbox.delivery_set_members m0
                          WHERE m0.delivery_set_version = e.delivery_set_version AND m0.event_type = e.event_type
                            AND m0.schema_version = e.schema_version AND m0.destination = i.destination OFFSET 0) m ON true
  ), ev AS (
    -- Per event of the batch: its open mandatory deliveries and the first
    -- acknowledged one (in destination order) that lacks its proof — an
    -- acknowledged finish of its current attempt, whose start carries it and
    -- its lease token, and a frozen ack equal to its member and the event
    -- (IS NOT TRUE: a missing finish or start is unproven).
    SELECT u.event_id, c.open, c.unproven
      FROM (SELECT DISTINCT x.event_id FROM i x) u
      CROSS JOIN LATERAL (
        SELECT count(*) FILTER (WHERE d2.status <> 'acknowledged') AS open,
               min(d2.destination) FILTER (WHERE d2.status = 'acknowledged' AND (
                 d2.ack_consumer_name = d2.consumer_name
                 AND d2.ack_receipt_type = d2.expected_receipt_type
                 AND d2.ack_receipt_schema_version = d2.expected_receipt_schema_version
                 AND d2.ack_event_envelope_digest_algorithm_version = e2.event_envelope_digest_algorithm_version
                 AND d2.ack_event_envelope_sha256 = e2.event_envelope_sha256
                 AND (coalesce(d2.xmin = pg_current_xact_id_if_assigned()::xid, false)
                      OR ((SELECT f.outcome FROM outbox.outbox_delivery_attempt_finishes f
                            WHERE f.attempt_id = d2.current_attempt_id) = 'acknowledged'
                          AND (SELECT s.event_id = d2.event_id AND s.destination = d2.destination AND s.lease_token = d2.lease_token
                                 FROM outbox.outbox_delivery_attempt_starts s
                                WHERE s.attempt_id = d2.current_attempt_id)))) IS NOT TRUE) AS unproven
          FROM outbox.outbox_deliveries d2
          LEFT JOIN outbox.outbox_events e2 ON e2.event_id = u.event_id
         WHERE d2.event_id = u.event_id AND d2.mandatory) c
  )
  SELECT b.event_id, b.destination, b.reason, c.complete, s.event_id, s.unproven
    INTO v_bad_event, v_bad_destination, v_bad_reason, v_complete, v_sibling_event, v_sibling_destination
    FROM (SELECT array_agg(v.event_id) FILTER (WHERE v.open = 0) AS complete FROM ev v) c
    LEFT JOIN (SELECT r.event_id, r.destination, r.reason FROM rowcheck r
                WHERE r.reason IS NOT NULL ORDER BY r.ord LIMIT 1) b ON true
    LEFT JOIN (SELECT v.event_id, v.unproven FROM ev v
                WHERE v.open = 0 AND v.unproven IS NOT NULL ORDER BY v.event_id LIMIT 1) s ON true;

  IF /* guard OW009.publication-unknown-event */ v_bad_reason = 'unknown event' THEN
    RAISE EXCEPTION 'outbox.record_publication: unknown event %', v_bad_event USING ERRCODE = 'OW009';
  ELSIF /* guard OW009.publication-no-delivery */ v_bad_reason = 'no delivery' THEN
    RAISE EXCEPTION 'outbox.record_publication: event % has no delivery to %', v_bad_event, v_bad_destination
      USING ERRCODE = 'OW009';
  ELSIF /* guard OW009.publication-invalid-ack */ v_bad_reason IS NOT NULL THEN
    RAISE EXCEPTION 'outbox.record_publication: invalid ack for event % destination %: %',
      v_bad_event, v_bad_destination, v_bad_reason USING ERRCODE = 'OW009';
  END IF;
  IF /* guard OW009.publication-unproven-sibling */ v_sibling_event IS NOT NULL THEN
    RAISE EXCEPTION 'outbox.record_publication: event % delivery to % is acknowledged without an acknowledged finish or a frozen ack equal to its member and event',
      v_sibling_event, v_sibling_destination USING ERRCODE = 'OW009';
  END IF;

  IF v_complete IS NOT NULL THEN
    -- Compare-and-set on the rows locked above: only events that were
    -- unpublished when locked (an earlier completion keeps its time), by
    -- the row ids the primary-key probes locked (they cannot move while
    -- locked), never by `published_at IS NULL` in the WHERE: that lets the
    -- planner walk the partial index of every unpublished event (issue 17).
    -- outbox.outbox_events_before_update (00002) proves completion again.
    UPDATE outbox.outbox_events e SET published_at = now()
     WHERE e.ctid = ANY(ARRAY(SELECT r.row_id FROM unnest(v_unpublished, v_unpublished_rows) AS r(event_id, row_id)
                               WHERE r.event_id = ANY(v_complete)))
       AND e.event_id = ANY(v_complete);
  END IF;

  RETURN QUERY
    SELECT i.event_id, i.destination,
           CASE WHEN i.event_id = ANY(coalesce(v_complete, '{}')) THEN 'complete' ELSE 'not_complete' END
      FROM ROWS FROM (unnest(p_event_ids), unnest(p_destinations)) WITH ORDINALITY AS i(event_id, destination, ord)
     ORDER BY i.ord;
END
$fn$;
-- +goose StatementEnd

-- +goose StatementBegin
-- Delivery transitions (OB-STORE-6, 00006): the same checks and messages;
-- the attempt start and finish are read by a primary-key probe per changed
-- row, and only for the transitions that need them (a renewal or a pending
-- row changing nothing reads neither; a claim reads no finish).
CREATE OR REPLACE FUNCTION outbox.deliveries_prove_transitions() RETURNS trigger
LANGUAGE plpgsql
-- Planned once per session (no parameters): probes only (see the header),
-- and no JIT (as in record_publication_batch above).
SET enable_seqscan = off
SET jit = off
AS $fn$
DECLARE
  v record;
BEGIN
  SELECT x.event_id, x.destination, x.old_status, x.new_status, x.reason INTO v
    FROM (
      SELECT n.event_id, n.destination, o.status AS old_status, n.status AS new_status,
        CASE
          WHEN o.status = 'pending' AND n.status = 'pending' THEN
            CASE WHEN (n.lease_owner, n.lease_token, n.lease_expires_at, n.current_attempt_id, n.attempt_count, n.last_attempt_at)
                      IS DISTINCT FROM
                      (o.lease_owner, o.lease_token, o.lease_expires_at, o.current_attempt_id, o.attempt_count, o.last_attempt_at)
              THEN 'a pending delivery changes no lease or attempt column' END
          WHEN o.status = 'pending' AND n.status = 'leased' THEN
            CASE
              WHEN n.current_attempt_id IS NOT DISTINCT FROM o.current_attempt_id
                OR n.lease_token IS NOT DISTINCT FROM o.lease_token
                THEN 'a claim takes a fresh attempt id and lease token'
              WHEN n.attempt_count <> o.attempt_count + 1 THEN 'a claim counts exactly one more attempt'
              WHEN n.lease_expires_at <= statement_timestamp() THEN 'a claim takes a lease that ends in the future'
              WHEN s.attempt_id IS NULL OR s.event_id <> n.event_id OR s.destination <> n.destination
                OR s.lease_token <> n.lease_token OR NOT (s.xmin = pg_current_xact_id()::xid)
                THEN 'a lease needs the attempt start of exactly that attempt id and lease token, in the same transaction'
            END
          WHEN o.status = 'pending' THEN n.status || ' only from leased'
          WHEN o.status <> 'leased' OR n.status = o.status AND n IS NOT DISTINCT FROM o THEN NULL -- terminal, unchanged
          WHEN (n.current_attempt_id, n.attempt_count) IS DISTINCT FROM (o.current_attempt_id, o.attempt_count)
            THEN 'the current attempt of a leased delivery changes only by a claim'
          WHEN n.status = 'leased' THEN
            CASE
              WHEN (n.lease_owner, n.lease_token) IS DISTINCT FROM (o.lease_owner, o.lease_token)
                THEN 'a renewal keeps the lease owner and token'
              WHEN n.lease_expires_at > o.lease_expires_at AND o.lease_expires_at <= statement_timestamp()
                THEN 'an expired lease cannot be renewed'
            END
          WHEN n.status = 'acknowledged' THEN
            CASE
              WHEN (n.lease_owner, n.lease_token, n.lease_expires_at) IS DISTINCT FROM (o.lease_owner, o.lease_token, o.lease_expires_at)
                THEN 'an ack keeps the lease it was fenced by'
              WHEN o.lease_expires_at <= statement_timestamp() THEN 'an ack needs a lease that has not expired'
              WHEN (n.ack_consumer_name, n.ack_receipt_type, n.ack_receipt_schema_version)
                   IS DISTINCT FROM (n.consumer_name, n.expected_receipt_type, n.expected_receipt_schema_version)
                THEN 'the ack consumer, receipt type or schema version is not the frozen member''s'
              WHEN s.attempt_id IS NULL OR s.event_id <> n.event_id OR s.destination <> n.destination
                OR s.lease_token <> o.lease_token OR f.outcome IS DISTINCT FROM 'acknowledged'
                THEN 'an ack needs an acknowledged finish of the attempt its lease fenced'
            END
          WHEN n.status = 'pending' THEN
            CASE
              WHEN num_nonnulls(n.lease_owner, n.lease_token, n.lease_expires_at) <> 0
                THEN 'a delivery returns to pending without its lease'
              WHEN s.attempt_id IS NULL OR s.event_id <> n.event_id OR s.destination <> n.destination
                OR s.lease_token <> o.lease_token OR f.retry_disposition IS NULL
                OR f.retry_disposition NOT IN ('retry_scheduled', 'reclaimable')
                THEN 'pending after a lease needs a retry_scheduled or reclaimable finish of that attempt'
            END
          WHEN n.status = 'quarantined' THEN
            CASE
              WHEN s.attempt_id IS NULL OR s.event_id <> n.event_id OR s.destination <> n.destination
                OR s.lease_token <> o.lease_token OR f.retry_disposition IS DISTINCT FROM 'quarantined'
                THEN 'a quarantine needs a quarantined finish of the leased attempt'
            END
        END AS reason
        FROM old_rows o
        JOIN new_rows n ON n.event_id = o.event_id AND n.destination = o.destination
        -- The attempt start of the claimed (pending → leased) or fenced
        -- attempt, and its finish when the lease ends: a primary-key probe
        -- per changed row (OFFSET 0: never flattened into a join that a plan
        -- could hash over a scan of the attempt tables).
        LEFT JOIN LATERAL (
          SELECT s0.attempt_id, s0.event_id, s0.destination, s0.lease_token, s0.xmin
            FROM outbox.outbox_delivery_attempt_starts s0
           WHERE s0.attempt_id = CASE WHEN o.status = 'pending' THEN n.current_attempt_id ELSE o.current_attempt_id END
             AND (o.status, n.status) NOT IN (('pending', 'pending'), ('leased', 'leased'))
          OFFSET 0) s ON true
        LEFT JOIN LATERAL (
          SELECT f0.outcome, f0.retry_disposition
            FROM outbox.outbox_delivery_attempt_finishes f0
           WHERE f0.attempt_id = s.attempt_id AND o.status = 'leased' AND n.status <> 'leased'
          OFFSET 0) f ON true
    ) x
   WHERE x.reason IS NOT NULL
   LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'outbox: delivery %/% % → %: %', v.event_id, v.destination, v.old_status, v.new_status, v.reason
      USING ERRCODE = 'OW019';
  END IF;
  RETURN NULL;
END
$fn$;
-- +goose StatementEnd

-- +goose StatementBegin
-- Terminal deliveries (OB-STORE-3, 00002): acknowledged and quarantined rows
-- take no UPDATE at all, not even one that changes nothing. A row version of
-- an acknowledged delivery written by a transaction is then always that
-- transaction's leased → acknowledged transition, which the transition guard
-- proved: outbox.record_publication_batch relies on it above (a no-op UPDATE
-- must not make a sibling acknowledged by an earlier, unproven write look
-- proven here). No dispatcher statement touches a terminal row (every fenced
-- write says status = 'leased').
CREATE OR REPLACE FUNCTION outbox.deliveries_before_update() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF /* guard OW001.delivery-frozen-columns */ (NEW.event_id, NEW.delivery_set_version, NEW.destination, NEW.consumer_name, NEW.expected_receipt_type,
      NEW.expected_receipt_schema_version, NEW.required_projection_name, NEW.required_projection_version,
      NEW.mandatory, NEW.created_at)
     IS DISTINCT FROM
     (OLD.event_id, OLD.delivery_set_version, OLD.destination, OLD.consumer_name, OLD.expected_receipt_type,
      OLD.expected_receipt_schema_version, OLD.required_projection_name, OLD.required_projection_version,
      OLD.mandatory, OLD.created_at) THEN
    RAISE EXCEPTION 'outbox: frozen columns of delivery %/% are immutable', OLD.event_id, OLD.destination
      USING ERRCODE = 'OW001';
  END IF;
  IF /* guard OW008.delivery-terminal */ OLD.status IN ('acknowledged', 'quarantined') THEN
    RAISE EXCEPTION 'outbox: delivery %/% is % (terminal)', OLD.event_id, OLD.destination, OLD.status
      USING ERRCODE = 'OW008';
  END IF;
  RETURN NEW;
END
$fn$;
-- +goose StatementEnd

-- +goose StatementBegin
-- The dispatcher's fenced acks of a batch (OB-CLAIM-2, OB-DELIVER-5), moved
-- from the statement dispatcher/sql/delivery_ack_batch.sql sent unprepared
-- (parsed and planned per batch, a large part of the ack's CPU at batches of
-- a few rows) into a function whose one generic plan per session can only
-- probe (the settings above). Same statement, same fences: each row set
-- acknowledged with its frozen ack receipt type and quadruple and its single
-- success finish appended only while its own fence holds (destination, event
-- id, attempt id, lease token, a lease still valid); it returns the attempt
-- ids of the rows it acknowledged, a row whose fence does not hold is simply
-- absent (lease lost for that one only). The rows are found by a primary-key
-- probe per ack and updated by their row ids; a row changed concurrently is
-- re-checked against its fence on its newest version (READ COMMITTED), as a
-- single-row UPDATE is. SECURITY INVOKER: it runs with the dispatcher's own
-- column grants, and the transition guard fires on its UPDATE as before.
CREATE FUNCTION outbox.ack_delivery_batch(
  p_destinations                       text[],
  p_event_ids                          uuid[],
  p_attempt_ids                        uuid[],
  p_lease_tokens                       uuid[],
  p_consumer_names                     text[],
  p_receipt_types                      text[],
  p_receipt_refs                       text[],
  p_receipt_schema_versions            text[],
  p_receipt_digest_algorithm_versions  text[],
  p_receipt_digests                    text[],
  p_envelope_digest_algorithm_versions text[],
  p_envelope_sha256s                   text[])
RETURNS SETOF uuid
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET jit = off
AS $fn$
BEGIN
  RETURN QUERY
    WITH input AS (
      SELECT * FROM ROWS FROM (unnest(p_destinations), unnest(p_event_ids),
        unnest(p_attempt_ids), unnest(p_lease_tokens), unnest(p_consumer_names),
        unnest(p_receipt_types), unnest(p_receipt_refs),
        unnest(p_receipt_schema_versions), unnest(p_receipt_digest_algorithm_versions),
        unnest(p_receipt_digests), unnest(p_envelope_digest_algorithm_versions),
        unnest(p_envelope_sha256s))
        AS i(destination, event_id, attempt_id, lease_token, consumer_name, receipt_type, receipt_ref, receipt_schema_version,
             receipt_digest_algorithm_version, receipt_digest, envelope_digest_algorithm_version, envelope_sha256)
    ), fenced AS (
      UPDATE outbox.outbox_deliveries d
      SET status = 'acknowledged', delivered_at = now(),
          ack_consumer_name = i.consumer_name, ack_receipt_type = i.receipt_type,
          ack_receipt_key = i.receipt_ref, ack_receipt_schema_version = i.receipt_schema_version,
          ack_receipt_digest_algorithm_version = i.receipt_digest_algorithm_version,
          ack_receipt_digest = i.receipt_digest,
          ack_event_envelope_digest_algorithm_version = i.envelope_digest_algorithm_version,
          ack_event_envelope_sha256 = i.envelope_sha256,
          last_error_code = NULL, last_error_ref = NULL
      FROM input i
      WHERE d.ctid = ANY(ARRAY(
              SELECT p.row_id FROM input x
              CROSS JOIN LATERAL (SELECT d0.ctid AS row_id FROM outbox.outbox_deliveries d0
                                   WHERE d0.event_id = x.event_id AND d0.destination = x.destination OFFSET 0) p))
        AND d.destination = i.destination AND d.event_id = i.event_id
        AND d.current_attempt_id = i.attempt_id AND d.lease_token = i.lease_token
        AND d.status = 'leased' AND d.lease_expires_at > clock_timestamp()
      RETURNING d.current_attempt_id
    )
    INSERT INTO outbox.outbox_delivery_attempt_finishes (attempt_id, finished_at, outcome, retry_disposition)
    SELECT current_attempt_id, now(), 'acknowledged', 'none' FROM fenced
    RETURNING attempt_id;
END
$fn$;
REVOKE ALL ON FUNCTION outbox.ack_delivery_batch(text[], uuid[], uuid[], uuid[], text[], text[], text[], text[], text[], text[], text[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox.ack_delivery_batch(text[], uuid[], uuid[], uuid[], text[], text[], text[], text[], text[], text[], text[], text[])
  TO oceanway_dispatcher;
-- +goose StatementEnd
