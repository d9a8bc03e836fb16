-- The delivery transition guard, one refusal per clause (issue 37).
--
-- outbox.deliveries_prove_transitions (00006, 00097) is redefined with the
-- same checks, order, messages and SQLSTATE (OW019), so that each refusal
-- is its own CASE branch carrying its clause marker (docs/guard-clauses.md)
-- and a test can tell each one apart from its absence. Two changes, both
-- removing a condition no write can reach because another check refuses
-- it first:
--
--   - a claim's fresh lease token. The claim branch refused a lease token
--     equal to the pending row's (n.lease_token IS NOT DISTINCT FROM
--     o.lease_token). A pending row never holds a token (it is born without
--     one, OW012; it returns to pending only without its lease,
--     OW019.retry-keeps-lease; a pending row changes no lease column,
--     OW019.pending-changes-lease), and a leased row always does (the table
--     CHECK outbox_deliveries_leased_has_lease), so that comparison is never
--     true. The rule "a claim takes a fresh lease token" is owned by
--     OW019.claim-without-start: the lease token must be the one of an
--     attempt start inserted by this transaction, and a token names one
--     start only (UNIQUE outbox_delivery_attempt_starts_token). The fresh
--     attempt id stays its own clause, OW019.claim-reuses-attempt: the
--     attempt start check alone does not refuse a re-claim, in the
--     transaction that started, finished (retry) and released an attempt,
--     of that same attempt id and token (its start is this transaction's).
--   - the ack's frozen member. The ack branch refused an ack consumer,
--     receipt type or schema version other than the frozen member's. An
--     acknowledged row carries all three (CHECK outbox_deliveries_ack_complete)
--     and each equal to its frozen column (CHECK
--     outbox_deliveries_ack_matches_member, 00001), checked on the row
--     before this AFTER trigger runs: the table CHECK owns the rule
--     (SQLSTATE 23514), and the branch is gone.
--
-- The RAISE itself is the clause OW019.unproven-transition (any reason
-- found). Nothing else changes: the plan settings, the lateral probes and
-- the transitions it proves are those of 00097.
--
-- outbox.retry_delivery_batch (00098) and outbox.ack_and_publish_batch
-- (00100) are replaced with their bodies unchanged, to carry their clause
-- markers in a live definition (see their statement below).

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION outbox.deliveries_prove_transitions() RETURNS trigger
LANGUAGE plpgsql
-- Planned once per session (no parameters): probes only, and no JIT (00097).
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
            CASE WHEN /* guard OW019.pending-changes-lease */
                      (n.lease_owner, n.lease_token, n.lease_expires_at, n.current_attempt_id, n.attempt_count, n.last_attempt_at)
                      IS DISTINCT FROM
                      (o.lease_owner, o.lease_token, o.lease_expires_at, o.current_attempt_id, o.attempt_count, o.last_attempt_at)
              THEN 'a pending delivery changes no lease or attempt column' END
          WHEN o.status = 'pending' AND n.status = 'leased' THEN
            CASE
              -- A fresh lease token: OW019.claim-without-start owns it (see the header).
              WHEN /* guard OW019.claim-reuses-attempt */ n.current_attempt_id IS NOT DISTINCT FROM o.current_attempt_id
                THEN 'a claim takes a fresh attempt id and lease token'
              WHEN /* guard OW019.claim-counts-not-one */ n.attempt_count <> o.attempt_count + 1
                THEN 'a claim counts exactly one more attempt'
              WHEN /* guard OW019.claim-lease-ended */ n.lease_expires_at <= statement_timestamp()
                THEN 'a claim takes a lease that ends in the future'
              WHEN /* guard OW019.claim-without-start */ s.attempt_id IS NULL OR s.event_id <> n.event_id OR s.destination <> n.destination
                OR s.lease_token <> n.lease_token OR NOT (s.xmin = pg_current_xact_id()::xid)
                THEN 'a lease needs the attempt start of exactly that attempt id and lease token, in the same transaction'
            END
          WHEN /* guard OW019.pending-skips-lease */ o.status = 'pending' THEN n.status || ' only from leased'
          WHEN o.status <> 'leased' OR n.status = o.status AND n IS NOT DISTINCT FROM o THEN NULL -- terminal, unchanged
          WHEN /* guard OW019.leased-attempt-changes */ (n.current_attempt_id, n.attempt_count) IS DISTINCT FROM (o.current_attempt_id, o.attempt_count)
            THEN 'the current attempt of a leased delivery changes only by a claim'
          WHEN n.status = 'leased' THEN
            CASE
              WHEN /* guard OW019.renewal-changes-owner */ (n.lease_owner, n.lease_token) IS DISTINCT FROM (o.lease_owner, o.lease_token)
                THEN 'a renewal keeps the lease owner and token'
              WHEN /* guard OW019.renewal-of-expired-lease */ n.lease_expires_at > o.lease_expires_at AND o.lease_expires_at <= statement_timestamp()
                THEN 'an expired lease cannot be renewed'
            END
          WHEN n.status = 'acknowledged' THEN
            CASE
              WHEN /* guard OW019.ack-changes-lease */ (n.lease_owner, n.lease_token, n.lease_expires_at) IS DISTINCT FROM (o.lease_owner, o.lease_token, o.lease_expires_at)
                THEN 'an ack keeps the lease it was fenced by'
              WHEN /* guard OW019.ack-after-lease-expiry */ o.lease_expires_at <= statement_timestamp()
                THEN 'an ack needs a lease that has not expired'
              -- The ack consumer, receipt type and schema version equal to the
              -- frozen member's: the table CHECK outbox_deliveries_ack_matches_member
              -- owns it (see the header).
              WHEN /* guard OW019.ack-without-finish */ s.attempt_id IS NULL OR s.event_id <> n.event_id OR s.destination <> n.destination
                OR s.lease_token <> o.lease_token OR f.outcome IS DISTINCT FROM 'acknowledged'
                THEN 'an ack needs an acknowledged finish of the attempt its lease fenced'
            END
          WHEN n.status = 'pending' THEN
            CASE
              WHEN /* guard OW019.retry-keeps-lease */ num_nonnulls(n.lease_owner, n.lease_token, n.lease_expires_at) <> 0
                THEN 'a delivery returns to pending without its lease'
              WHEN /* guard OW019.retry-without-finish */ s.attempt_id IS NULL OR s.event_id <> n.event_id OR s.destination <> n.destination
                OR s.lease_token <> o.lease_token OR f.retry_disposition IS NULL
                OR f.retry_disposition NOT IN ('retry_scheduled', 'reclaimable')
                THEN 'pending after a lease needs a retry_scheduled or reclaimable finish of that attempt'
            END
          WHEN n.status = 'quarantined' THEN
            CASE
              WHEN /* guard OW019.quarantine-without-finish */ s.attempt_id IS NULL OR s.event_id <> n.event_id OR s.destination <> n.destination
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
  IF /* guard OW019.unproven-transition */ FOUND THEN
    RAISE EXCEPTION 'outbox: delivery %/% % → %: %', v.event_id, v.destination, v.old_status, v.new_status, v.reason
      USING ERRCODE = 'OW019';
  END IF;
  RETURN NULL;
END
$fn$;
-- +goose StatementEnd

-- +goose StatementBegin
-- outbox.retry_delivery_batch (00098) and outbox.ack_and_publish_batch
-- (00100), unchanged but for their clause markers: replaced here, without a
-- Down section, so that the live definition carries them (the guards index
-- reads each migration file whole, and the Down sections of 00098 and 00100
-- drop these functions). Their refusals have no project SQLSTATE
-- (invalid_parameter_value) or are OW013; grants and owners are kept by
-- CREATE OR REPLACE.
CREATE OR REPLACE FUNCTION outbox.retry_delivery_batch(
  p_destinations text[],
  p_event_ids    uuid[],
  p_attempt_ids  uuid[],
  p_lease_tokens uuid[],
  p_backoff_ms   bigint[],
  p_error_codes  text[])
RETURNS SETOF uuid
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET jit = off
AS $fn$
DECLARE
  v_n int := cardinality(p_destinations);
BEGIN
  IF /* guard OB-DELIVER-2.retry-batch-arguments */ v_n IS NULL
     OR num_nulls(p_event_ids, p_attempt_ids, p_lease_tokens, p_backoff_ms, p_error_codes) <> 0
     OR v_n <> ANY (ARRAY[cardinality(p_event_ids), cardinality(p_attempt_ids), cardinality(p_lease_tokens),
          cardinality(p_backoff_ms), cardinality(p_error_codes)])
     OR array_position(p_destinations, NULL) IS NOT NULL OR array_position(p_event_ids, NULL) IS NOT NULL
     OR array_position(p_attempt_ids, NULL) IS NOT NULL OR array_position(p_lease_tokens, NULL) IS NOT NULL
     OR array_position(p_backoff_ms, NULL) IS NOT NULL OR array_position(p_error_codes, NULL) IS NOT NULL THEN
    RAISE EXCEPTION 'outbox.retry_delivery_batch: every argument is required, as arrays of one length without NULLs'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF /* guard OB-DELIVER-2.retry-batch-negative-backoff */ 0 > ANY (p_backoff_ms) THEN
    RAISE EXCEPTION 'outbox.retry_delivery_batch: a backoff cannot be negative' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  RETURN QUERY
    WITH input AS (
      SELECT * FROM ROWS FROM (unnest(p_destinations), unnest(p_event_ids), unnest(p_attempt_ids),
        unnest(p_lease_tokens), unnest(p_backoff_ms), unnest(p_error_codes))
        AS i(destination, event_id, attempt_id, lease_token, backoff_ms, error_code)
    ), fenced AS (
      UPDATE outbox.outbox_deliveries d
      SET status = 'pending',
          available_at = clock_timestamp() + make_interval(secs => i.backoff_ms / 1000.0),
          lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, last_error_code = i.error_code
      FROM input i
      WHERE d.ctid = ANY(ARRAY(
              SELECT p.row_id FROM input x
              CROSS JOIN LATERAL (SELECT d0.ctid AS row_id FROM outbox.outbox_deliveries d0
                                   WHERE d0.event_id = x.event_id AND d0.destination = x.destination OFFSET 0) p))
        AND d.destination = i.destination AND d.event_id = i.event_id
        AND d.current_attempt_id = i.attempt_id AND d.lease_token = i.lease_token
        AND d.status = 'leased' AND d.lease_expires_at > clock_timestamp()
      RETURNING d.current_attempt_id, i.error_code
    )
    INSERT INTO outbox.outbox_delivery_attempt_finishes (attempt_id, finished_at, outcome, retry_disposition, normalized_error_code)
    SELECT current_attempt_id, now(), 'retryable', 'retry_scheduled', error_code FROM fenced
    RETURNING attempt_id;
END
$fn$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION outbox.ack_and_publish_batch(
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
  p_envelope_sha256s                   text[],
  p_ack_destinations                   text[],
  p_ack_event_ids                      uuid[],
  p_ack_receipt_types                  text[])
RETURNS SETOF uuid
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $fn$
DECLARE
  v_n        int := cardinality(p_attempt_ids);
  v_finished uuid[];
  v_pub      record;
BEGIN
  IF /* guard OW013.ack-publish-isolation */ current_setting('transaction_isolation') <> 'read committed' THEN
    RAISE EXCEPTION 'outbox.ack_and_publish_batch runs under READ COMMITTED, not %', current_setting('transaction_isolation')
      USING ERRCODE = 'OW013';
  END IF;
  IF /* guard OB-PUB-1.ack-publish-arguments */ v_n IS NULL
     OR num_nulls(p_destinations, p_event_ids, p_lease_tokens, p_consumer_names, p_receipt_types, p_receipt_refs,
          p_receipt_schema_versions, p_receipt_digest_algorithm_versions, p_receipt_digests,
          p_envelope_digest_algorithm_versions, p_envelope_sha256s,
          p_ack_destinations, p_ack_event_ids, p_ack_receipt_types) <> 0
     OR v_n <> ANY (ARRAY[cardinality(p_destinations), cardinality(p_event_ids), cardinality(p_lease_tokens),
          cardinality(p_consumer_names), cardinality(p_receipt_types), cardinality(p_receipt_refs),
          cardinality(p_receipt_schema_versions), cardinality(p_receipt_digest_algorithm_versions),
          cardinality(p_receipt_digests), cardinality(p_envelope_digest_algorithm_versions),
          cardinality(p_envelope_sha256s), cardinality(p_ack_destinations), cardinality(p_ack_event_ids),
          cardinality(p_ack_receipt_types)])
     OR array_position(p_attempt_ids, NULL) IS NOT NULL THEN
    RAISE EXCEPTION 'outbox.ack_and_publish_batch: every argument is required, all of one length, and no attempt id is null'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;

  SELECT array_agg(a.attempt_id) INTO v_finished
    FROM outbox.ack_delivery_batch(p_destinations, p_event_ids, p_attempt_ids, p_lease_tokens, p_consumer_names,
           p_receipt_types, p_receipt_refs, p_receipt_schema_versions, p_receipt_digest_algorithm_versions,
           p_receipt_digests, p_envelope_digest_algorithm_versions, p_envelope_sha256s) AS a(attempt_id);
  IF v_finished IS NULL THEN
    RETURN;
  END IF;

  -- The acks whose fence held, in input order, with the ack's own
  -- coordinates: the published_at function compares them with the frozen
  -- member and the row the fenced statement just wrote.
  SELECT array_agg(i.ack_event_id ORDER BY i.ord) AS event_ids,
         array_agg(i.ack_destination ORDER BY i.ord) AS destinations,
         array_agg(i.consumer_name ORDER BY i.ord) AS consumer_names,
         array_agg(i.attempt_id ORDER BY i.ord) AS attempt_ids,
         array_agg(i.lease_token ORDER BY i.ord) AS lease_tokens,
         array_agg(i.ack_receipt_type ORDER BY i.ord) AS receipt_types,
         array_agg(i.receipt_ref ORDER BY i.ord) AS receipt_refs,
         array_agg(i.receipt_schema_version ORDER BY i.ord) AS receipt_schema_versions,
         array_agg(i.receipt_digest_algorithm_version ORDER BY i.ord) AS receipt_digest_algorithm_versions,
         array_agg(i.receipt_digest ORDER BY i.ord) AS receipt_digests,
         array_agg(i.envelope_digest_algorithm_version ORDER BY i.ord) AS envelope_digest_algorithm_versions,
         array_agg(i.envelope_sha256 ORDER BY i.ord) AS envelope_sha256s
    INTO v_pub
    FROM ROWS FROM (unnest(p_attempt_ids), unnest(p_lease_tokens), unnest(p_consumer_names), unnest(p_receipt_refs),
           unnest(p_receipt_schema_versions), unnest(p_receipt_digest_algorithm_versions), unnest(p_receipt_digests),
           unnest(p_envelope_digest_algorithm_versions), unnest(p_envelope_sha256s),
           unnest(p_ack_destinations), unnest(p_ack_event_ids), unnest(p_ack_receipt_types)) WITH ORDINALITY
         AS i(attempt_id, lease_token, consumer_name, receipt_ref, receipt_schema_version, receipt_digest_algorithm_version,
              receipt_digest, envelope_digest_algorithm_version, envelope_sha256, ack_destination, ack_event_id,
              ack_receipt_type, ord)
   WHERE i.attempt_id = ANY(v_finished);

  PERFORM count(*) FROM outbox.record_publication_batch(v_pub.event_ids, v_pub.destinations, v_pub.consumer_names,
    v_pub.attempt_ids, v_pub.lease_tokens, v_pub.receipt_types, v_pub.receipt_refs, v_pub.receipt_schema_versions,
    v_pub.receipt_digest_algorithm_versions, v_pub.receipt_digests, v_pub.envelope_digest_algorithm_versions,
    v_pub.envelope_sha256s);

  RETURN QUERY SELECT unnest(v_finished);
END
$fn$;
-- +goose StatementEnd
