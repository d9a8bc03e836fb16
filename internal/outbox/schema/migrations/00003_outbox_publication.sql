-- The published_at controlled function (OB-PUB-1). Called by the dispatcher
-- in its ack transaction, after it appended the success finish and set the
-- delivery acknowledged with the frozen ack columns. Returns
--   'not_complete' the ack is valid, another mandatory delivery is still open:
--                  published_at stays NULL and the ack commits;
--   'complete'     every mandatory delivery is acknowledged: published_at is
--                  CAS'ed NULL → now() (an earlier completion keeps its time);
-- and raises SQLSTATE OW009 (invalid: the caller's transaction rolls back)
-- when anything disagrees with the frozen event, member, delivery or attempt.

-- +goose Up
-- +goose StatementBegin
----------------------------------------------------------------------------
-- OB-PUB-1: a sibling counts as done only with its proof: an acknowledged
-- finish of its current attempt and a frozen ack equal to the member and
-- the event (checked inline below, before 'complete').
-- The caller passes the ack's own event id and receipt
-- coordinates (dispatcher/ack_batcher.go), which are compared with the
-- frozen member, the event and the recorded ack.
CREATE FUNCTION outbox.record_publication(
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
  e outbox.outbox_events%ROWTYPE;
  d outbox.outbox_deliveries%ROWTYPE;
  m outbox.delivery_set_members%ROWTYPE;
  v_reason     text;
  v_unproven   text;
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

  SELECT * INTO e FROM outbox.outbox_events WHERE event_id = p_event_id FOR NO KEY UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'outbox.record_publication: unknown event %', p_event_id USING ERRCODE = 'OW009';
  END IF;
  SELECT * INTO d FROM outbox.outbox_deliveries WHERE event_id = p_event_id AND destination = p_destination;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'outbox.record_publication: event % has no delivery to %', p_event_id, p_destination
      USING ERRCODE = 'OW009';
  END IF;
  SELECT * INTO m FROM outbox.delivery_set_members
   WHERE delivery_set_version = e.delivery_set_version AND event_type = e.event_type
     AND schema_version = e.schema_version AND destination = p_destination;

  v_reason := CASE
    WHEN m.delivery_set_version IS NULL OR NOT m.mandatory
      THEN 'destination is not a mandatory member of the event''s frozen definition'
    WHEN d.delivery_set_version <> e.delivery_set_version
      THEN 'delivery and event froze different definitions'
    WHEN p_consumer_name <> m.consumer_name OR d.consumer_name <> m.consumer_name
      THEN 'consumer does not match the frozen destination → consumer mapping'
    WHEN p_ack_receipt_type <> m.expected_receipt_type OR p_ack_receipt_schema_version <> m.expected_receipt_schema_version
      OR d.expected_receipt_type <> m.expected_receipt_type OR d.expected_receipt_schema_version <> m.expected_receipt_schema_version
      THEN 'receipt type or schema version does not match the frozen member'
    WHEN d.required_projection_name IS DISTINCT FROM m.projection_name
      OR d.required_projection_version IS DISTINCT FROM m.projection_version
      THEN 'delivery projection target does not match the frozen member'
    WHEN p_ack_event_envelope_digest_algorithm_version <> e.event_envelope_digest_algorithm_version
      OR p_ack_event_envelope_sha256 <> e.event_envelope_sha256
      THEN 'ack envelope digest does not match the event'
    WHEN d.status <> 'acknowledged'
      THEN 'delivery is not acknowledged'
    WHEN (d.ack_consumer_name, d.ack_receipt_type, d.ack_receipt_key, d.ack_receipt_schema_version,
          d.ack_receipt_digest_algorithm_version, d.ack_receipt_digest,
          d.ack_event_envelope_digest_algorithm_version, d.ack_event_envelope_sha256)
      IS DISTINCT FROM
         (p_consumer_name, p_ack_receipt_type, p_ack_receipt_key, p_ack_receipt_schema_version,
          p_ack_receipt_digest_algorithm_version, p_ack_receipt_digest,
          p_ack_event_envelope_digest_algorithm_version, p_ack_event_envelope_sha256)
      THEN 'delivery was acknowledged with other receipt coordinates'
    WHEN d.current_attempt_id IS DISTINCT FROM p_attempt_id OR d.lease_token IS DISTINCT FROM p_lease_token
      THEN 'attempt or lease token is not the delivery''s current one'
    WHEN NOT EXISTS (SELECT 1 FROM outbox.outbox_delivery_attempt_starts s
                       JOIN outbox.outbox_delivery_attempt_finishes f ON f.attempt_id = s.attempt_id
                      WHERE s.attempt_id = p_attempt_id AND s.event_id = p_event_id
                        AND s.destination = p_destination AND s.lease_token = p_lease_token
                        AND f.outcome = 'acknowledged')
      THEN 'attempt start with this lease token has no acknowledged finish'
  END;
  IF v_reason IS NOT NULL THEN
    RAISE EXCEPTION 'outbox.record_publication: invalid ack for event % destination %: %', p_event_id, p_destination, v_reason
      USING ERRCODE = 'OW009';
  END IF;

  IF NOT outbox.all_mandatory_acknowledged(p_event_id) THEN
    RETURN 'not_complete';
  END IF;
  -- The sibling proof: the first mandatory acknowledged delivery without an
  -- acknowledged finish of its current attempt or a frozen ack equal to its
  -- member and the event (inline SQL, so PL/pgSQL caches its plan).
  SELECT d2.destination INTO v_unproven
    FROM outbox.outbox_deliveries d2
   WHERE d2.event_id = p_event_id AND d2.mandatory AND d2.status = 'acknowledged'
     -- IS NOT TRUE: a missing finish or start (a NULL sub-select) is unproven.
     AND (d2.ack_consumer_name = d2.consumer_name
              AND d2.ack_receipt_type = d2.expected_receipt_type
              AND d2.ack_receipt_schema_version = d2.expected_receipt_schema_version
              AND d2.ack_event_envelope_digest_algorithm_version = e.event_envelope_digest_algorithm_version
              AND d2.ack_event_envelope_sha256 = e.event_envelope_sha256
              -- Scalar sub-selects, probed by primary key per sibling: an
              -- EXISTS here may be planned as a hashed sub-plan over every
              -- acknowledged finish, which grows with history (issue 17).
              AND (SELECT f.outcome FROM outbox.outbox_delivery_attempt_finishes f
                    WHERE f.attempt_id = d2.current_attempt_id) = 'acknowledged'
              AND (SELECT s.event_id = d2.event_id AND s.destination = d2.destination AND s.lease_token = d2.lease_token
                     FROM outbox.outbox_delivery_attempt_starts s
                    WHERE s.attempt_id = d2.current_attempt_id)) IS NOT TRUE
   ORDER BY d2.destination
   LIMIT 1;
  IF v_unproven IS NOT NULL THEN
    RAISE EXCEPTION 'outbox.record_publication: event % delivery to % is acknowledged without an acknowledged finish or a frozen ack equal to its member and event',
      p_event_id, v_unproven USING ERRCODE = 'OW009';
  END IF;
  -- The event row is read and locked into e above, so test published_at on
  -- it and update by primary key: `AND published_at IS NULL` in the WHERE
  -- lets the planner pick the partial index of every unpublished event
  -- (issue 17: it read the whole backlog per acknowledgement).
  IF e.published_at IS NULL THEN
    UPDATE outbox.outbox_events SET published_at = now() WHERE event_id = p_event_id;
  END IF;
  RETURN 'complete';
END
$fn$;

COMMENT ON FUNCTION outbox.record_publication(uuid, text, text, uuid, uuid, text, text, text, text, text, text, text) IS
  'OB-PUB-1: validates one acknowledged delivery against its frozen member and event, then CAS published_at NULL → now() when all mandatory deliveries are acknowledged. Returns complete | not_complete; raises OW009 when invalid.';
-- +goose StatementEnd

