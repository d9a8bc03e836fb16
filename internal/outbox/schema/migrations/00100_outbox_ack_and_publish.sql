-- One statement per ack batch (issue 17: the serial ack stage).
--
-- An ack batch was a transaction of four round trips: BEGIN, the fenced
-- statement (outbox.ack_delivery_batch, 00097), the controlled published_at
-- function over the acks that passed their fences
-- (outbox.record_publication_batch, 00095/00097), and COMMIT. The acker is
-- the one serial stage of a dispatcher, and on a busy machine every round
-- trip is also a wait for the backend and the acker to be scheduled again.
--
-- outbox.ack_and_publish_batch runs both in one call, so a dispatcher can
-- send it as a single statement in its own implicit transaction (one round
-- trip; the deferred proofs still run at its commit) or inside a caller's
-- transaction. It changes no check:
--   - the fenced statement is outbox.ack_delivery_batch itself, with the
--     claim's fence and the frozen member's receipt type;
--   - the published_at function is outbox.record_publication_batch itself
--     (SECURITY DEFINER, its own checks and OW009/OW013 errors), called with
--     the ack's own destination, event id and receipt type, for exactly the
--     rows whose fence held, in input order;
--   - it returns the attempt ids the fenced statement finished (a row whose
--     fence does not hold is absent: that lease only is lost).
-- It refuses to run outside READ COMMITTED (OW013, before any write): the
-- published_at function needs a fresh snapshot per statement, and a
-- session whose default isolation is stricter must use an explicit READ
-- COMMITTED transaction. Malformed arrays are refused with
-- invalid_parameter_value and change nothing.
--
-- SECURITY INVOKER: the dispatcher role's grants, the transition guard and
-- the deferred proofs apply as before.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION outbox.ack_and_publish_batch(
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
REVOKE ALL ON FUNCTION outbox.ack_and_publish_batch(text[], uuid[], uuid[], uuid[], text[], text[], text[], text[], text[],
  text[], text[], text[], text[], uuid[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox.ack_and_publish_batch(text[], uuid[], uuid[], uuid[], text[], text[], text[], text[], text[],
  text[], text[], text[], text[], uuid[], text[]) TO oceanway_dispatcher;

-- +goose Down
DROP FUNCTION outbox.ack_and_publish_batch(text[], uuid[], uuid[], uuid[], text[], text[], text[], text[], text[], text[],
  text[], text[], text[], uuid[], text[]);
