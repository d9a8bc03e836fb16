-- The published_at controlled function over a whole ack batch (OB-PUB-1,
-- issue 17 item 2): outbox.record_publication_batch, record_publication's
-- arguments as parallel arrays (its own name: an overload of the same arity
-- would make calls with untyped arguments ambiguous). The dispatcher records a batch of verified acks with one
-- fenced statement and then one call of this function with parallel arrays,
-- instead of one call per ack (each a dozen statements inside PL/pgSQL). It
-- proves exactly what the one-ack function proved, per row, with a few
-- set-based statements whose every table access is bounded by the batch's
-- event ids (`event_id = ANY(...)` on a primary key), so no plan can walk a
-- table as history grows. It is now the only body that writes published_at:
-- the one-ack function (00003) is redefined here as a batch of one, with the
-- same answers and the same OW009 messages.
--
-- Returns one row per input: (event_id, destination, result) with result
-- 'complete' or 'not_complete'; raises OW009 (the caller's transaction rolls
-- back) when any row disagrees with the frozen event, member, delivery or
-- attempt, OW013 outside READ COMMITTED.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION outbox.record_publication_batch(
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
-- Each statement is planned for the batch at hand and the table as it is
-- now, never from a generic plan a session cached while the tables were a
-- few pages long (which reads them sequentially for as long as the session
-- lives; issue 17). The planning is per batch, not per ack.
SET plan_cache_mode = force_custom_plan
AS $fn$
DECLARE
  v_n           int;
  v_bad         record;
  v_unpublished uuid[];
  v_unpublished_rows tid[];
  v_complete    uuid[];
BEGIN
  IF current_setting('transaction_isolation') <> 'read committed' THEN
    RAISE EXCEPTION 'outbox.record_publication_batch runs under READ COMMITTED, not %', current_setting('transaction_isolation')
      USING ERRCODE = 'OW013';
  END IF;
  v_n := cardinality(p_event_ids);
  IF v_n IS NULL
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
  -- in one order). A sibling ack committing meanwhile is waited for; every
  -- later statement here takes a fresh snapshot and sees it.
  SELECT array_agg(l.event_id) FILTER (WHERE l.published_at IS NULL),
         array_agg(l.row_id) FILTER (WHERE l.published_at IS NULL)
    INTO v_unpublished, v_unpublished_rows
    FROM (SELECT DISTINCT u.event_id FROM unnest(p_event_ids) AS u(event_id) ORDER BY u.event_id) u
    CROSS JOIN LATERAL (SELECT e.event_id, e.published_at, e.ctid AS row_id FROM outbox.outbox_events e
                         WHERE e.event_id = u.event_id FOR NO KEY UPDATE) l;

  -- Every row checked as the one-ack function checks it; the first failure
  -- (in input order) is raised.
  SELECT x.event_id, x.destination, x.reason INTO v_bad FROM (
    SELECT i.event_id, i.destination, CASE
        WHEN e.event_id IS NULL THEN 'unknown event'
        WHEN d.event_id IS NULL THEN 'no delivery'
        WHEN m.delivery_set_version IS NULL OR NOT m.mandatory
          THEN 'destination is not a mandatory member of the event''s frozen definition'
        WHEN d.delivery_set_version <> e.delivery_set_version
          THEN 'delivery and event froze different definitions'
        WHEN i.consumer_name <> m.consumer_name OR d.consumer_name <> m.consumer_name
          THEN 'consumer does not match the frozen destination → consumer mapping'
        WHEN i.receipt_type <> m.expected_receipt_type OR i.receipt_schema_version <> m.expected_receipt_schema_version
          OR d.expected_receipt_type <> m.expected_receipt_type OR d.expected_receipt_schema_version <> m.expected_receipt_schema_version
          THEN 'receipt type or schema version does not match the frozen member'
        WHEN d.required_projection_name IS DISTINCT FROM m.projection_name
          OR d.required_projection_version IS DISTINCT FROM m.projection_version
          THEN 'delivery projection target does not match the frozen member'
        WHEN i.envelope_digest_algorithm_version <> e.event_envelope_digest_algorithm_version
          OR i.envelope_sha256 <> e.event_envelope_sha256
          THEN 'ack envelope digest does not match the event'
        WHEN d.status <> 'acknowledged'
          THEN 'delivery is not acknowledged'
        WHEN (d.ack_consumer_name, d.ack_receipt_type, d.ack_receipt_key, d.ack_receipt_schema_version,
              d.ack_receipt_digest_algorithm_version, d.ack_receipt_digest,
              d.ack_event_envelope_digest_algorithm_version, d.ack_event_envelope_sha256)
          IS DISTINCT FROM
             (i.consumer_name, i.receipt_type, i.receipt_key, i.receipt_schema_version,
              i.receipt_digest_algorithm_version, i.receipt_digest,
              i.envelope_digest_algorithm_version, i.envelope_sha256)
          THEN 'delivery was acknowledged with other receipt coordinates'
        WHEN d.current_attempt_id IS DISTINCT FROM i.attempt_id OR d.lease_token IS DISTINCT FROM i.lease_token
          THEN 'attempt or lease token is not the delivery''s current one'
        -- Scalar sub-selects probed by primary key (see the sibling proof).
        WHEN ((SELECT s.event_id = i.event_id AND s.destination = i.destination AND s.lease_token = i.lease_token
                 FROM outbox.outbox_delivery_attempt_starts s WHERE s.attempt_id = i.attempt_id)
              AND (SELECT f.outcome FROM outbox.outbox_delivery_attempt_finishes f
                    WHERE f.attempt_id = i.attempt_id) = 'acknowledged') IS NOT TRUE
          THEN 'attempt start with this lease token has no acknowledged finish'
      END AS reason, i.ord
      FROM ROWS FROM (unnest(p_event_ids), unnest(p_destinations), unnest(p_consumer_names), unnest(p_attempt_ids),
             unnest(p_lease_tokens), unnest(p_ack_receipt_types), unnest(p_ack_receipt_keys),
             unnest(p_ack_receipt_schema_versions), unnest(p_ack_receipt_digest_algorithm_versions),
             unnest(p_ack_receipt_digests), unnest(p_ack_event_envelope_digest_algorithm_versions),
             unnest(p_ack_event_envelope_sha256s)) WITH ORDINALITY
           AS i(event_id, destination, consumer_name, attempt_id, lease_token, receipt_type, receipt_key,
                receipt_schema_version, receipt_digest_algorithm_version, receipt_digest,
                envelope_digest_algorithm_version, envelope_sha256, ord)
      -- Lateral primary-key probes per row (OFFSET 0 keeps them from being
      -- flattened into a join a cached generic plan might hash over a
      -- sequential scan).
      LEFT JOIN LATERAL (SELECT e0.* FROM outbox.outbox_events e0 WHERE e0.event_id = i.event_id OFFSET 0) e ON true
      LEFT JOIN LATERAL (SELECT d0.* FROM outbox.outbox_deliveries d0
                          WHERE d0.event_id = i.event_id AND d0.destination = i.destination OFFSET 0) d ON true
      LEFT JOIN outbox.delivery_set_members m
        ON m.delivery_set_version = e.delivery_set_version AND m.event_type = e.event_type
       AND m.schema_version = e.schema_version AND m.destination = i.destination
  ) x
   WHERE x.reason IS NOT NULL
   ORDER BY x.ord
   LIMIT 1;
  IF FOUND THEN
    IF v_bad.reason = 'unknown event' THEN
      RAISE EXCEPTION 'outbox.record_publication: unknown event %', v_bad.event_id USING ERRCODE = 'OW009';
    ELSIF v_bad.reason = 'no delivery' THEN
      RAISE EXCEPTION 'outbox.record_publication: event % has no delivery to %', v_bad.event_id, v_bad.destination
        USING ERRCODE = 'OW009';
    END IF;
    RAISE EXCEPTION 'outbox.record_publication: invalid ack for event % destination %: %',
      v_bad.event_id, v_bad.destination, coalesce(v_bad.reason, 'rejected') USING ERRCODE = 'OW009';
  END IF;

  -- Events every mandatory delivery of which is acknowledged.
  SELECT array_agg(x.event_id) INTO v_complete
    FROM (SELECT DISTINCT u.event_id FROM unnest(p_event_ids) AS u(event_id)) x
   WHERE (SELECT count(*) FROM outbox.outbox_deliveries d
           WHERE d.event_id = x.event_id AND d.mandatory AND d.status <> 'acknowledged') = 0;

  IF v_complete IS NOT NULL THEN
    -- The sibling proof: a sibling counts as done only with an acknowledged
    -- finish of its current attempt and a frozen ack equal to its member
    -- and the event (IS NOT TRUE: a missing finish or start is unproven).
    SELECT p.event_id, p.destination INTO v_bad
      FROM unnest(v_complete) AS c(event_id)
      CROSS JOIN LATERAL (
        SELECT d2.event_id, d2.destination
          FROM outbox.outbox_deliveries d2
          JOIN outbox.outbox_events e ON e.event_id = c.event_id
         WHERE d2.event_id = c.event_id AND d2.mandatory AND d2.status = 'acknowledged'
           AND (d2.ack_consumer_name = d2.consumer_name
                    AND d2.ack_receipt_type = d2.expected_receipt_type
                    AND d2.ack_receipt_schema_version = d2.expected_receipt_schema_version
                    AND d2.ack_event_envelope_digest_algorithm_version = e.event_envelope_digest_algorithm_version
                    AND d2.ack_event_envelope_sha256 = e.event_envelope_sha256
                    AND (SELECT f.outcome FROM outbox.outbox_delivery_attempt_finishes f
                          WHERE f.attempt_id = d2.current_attempt_id) = 'acknowledged'
                    AND (SELECT s.event_id = d2.event_id AND s.destination = d2.destination AND s.lease_token = d2.lease_token
                           FROM outbox.outbox_delivery_attempt_starts s
                          WHERE s.attempt_id = d2.current_attempt_id)) IS NOT TRUE
        OFFSET 0) p
     ORDER BY p.event_id, p.destination
     LIMIT 1;
    IF FOUND THEN
      RAISE EXCEPTION 'outbox.record_publication: event % delivery to % is acknowledged without an acknowledged finish or a frozen ack equal to its member and event',
        v_bad.event_id, v_bad.destination USING ERRCODE = 'OW009';
    END IF;
    -- Compare-and-set on the rows locked above: only events that were
    -- unpublished when locked (an earlier completion keeps its time), by
    -- the row ids the primary-key probes locked (they cannot move while
    -- locked), never by `published_at IS NULL` in the WHERE: that lets the
    -- planner walk the partial index of every unpublished event (issue 17).
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

COMMENT ON FUNCTION outbox.record_publication_batch(uuid[], text[], text[], uuid[], uuid[], text[], text[], text[], text[], text[], text[], text[]) IS
  'OB-PUB-1: validates a batch of acknowledged deliveries against their frozen members and events, then CAS published_at NULL → now() for every event whose mandatory deliveries are all acknowledged. One row per input: complete | not_complete; raises OW009 when any is invalid.';

-- The one-ack function is a batch of one: one body writes published_at.
CREATE OR REPLACE FUNCTION outbox.record_publication(
  p_event_id                                    uuid,
  p_destination                                 text,
  p_consumer_name                               text,
  p_attempt_id                                  uuid,
  p_lease_token                                 uuid,
  p_ack_receipt_type                            text,
  p_ack_receipt_key                             text,
  p_ack_receipt_schema_version                  text,
  p_ack_receipt_digest_algorithm_version        text,
  p_ack_receipt_digest                          text,
  p_ack_event_envelope_digest_algorithm_version text,
  p_ack_event_envelope_sha256                   text)
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_result text;
BEGIN
  IF current_setting('transaction_isolation') <> 'read committed' THEN
    RAISE EXCEPTION 'outbox.record_publication runs under READ COMMITTED, not %', current_setting('transaction_isolation')
      USING ERRCODE = 'OW013';
  END IF;
  IF num_nulls(p_event_id, p_destination, p_consumer_name, p_attempt_id, p_lease_token, p_ack_receipt_type,
       p_ack_receipt_key, p_ack_receipt_schema_version, p_ack_receipt_digest_algorithm_version, p_ack_receipt_digest,
       p_ack_event_envelope_digest_algorithm_version, p_ack_event_envelope_sha256) <> 0 THEN
    RAISE EXCEPTION 'outbox.record_publication: every argument is required' USING ERRCODE = 'OW009';
  END IF;
  SELECT r.result INTO v_result
    FROM outbox.record_publication_batch(ARRAY[p_event_id], ARRAY[p_destination], ARRAY[p_consumer_name], ARRAY[p_attempt_id],
      ARRAY[p_lease_token], ARRAY[p_ack_receipt_type], ARRAY[p_ack_receipt_key], ARRAY[p_ack_receipt_schema_version],
      ARRAY[p_ack_receipt_digest_algorithm_version], ARRAY[p_ack_receipt_digest],
      ARRAY[p_ack_event_envelope_digest_algorithm_version], ARRAY[p_ack_event_envelope_sha256]) r;
  RETURN v_result;
END
$fn$;

ALTER FUNCTION outbox.record_publication_batch(uuid[], text[], text[], uuid[], uuid[], text[], text[], text[], text[], text[], text[], text[])
  OWNER TO oceanway_outbox_definer;
REVOKE ALL ON FUNCTION
  outbox.record_publication_batch(uuid[], text[], text[], uuid[], uuid[], text[], text[], text[], text[], text[], text[], text[])
  FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
  outbox.record_publication_batch(uuid[], text[], text[], uuid[], uuid[], text[], text[], text[], text[], text[], text[], text[])
  TO oceanway_dispatcher;
-- +goose StatementEnd
