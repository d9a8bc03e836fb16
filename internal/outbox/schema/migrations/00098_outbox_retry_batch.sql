-- Retries recorded set-based per batch (issue 17, item 2: "record acks,
-- retries and publication set-based per batch").
--
-- A retryable consumer failure used to be one fenced statement per delivery
-- (dispatcher/queries/retry.sql). In a failure storm (a consumer down, every
-- delivery of every claim failing) that is one statement, one commit and one
-- run of the statement-level transition guard (00006) per delivery.
-- outbox.retry_delivery_batch records a batch of retries in one statement,
-- each row under its own fence exactly as the single retry: destination,
-- event id, current attempt id, lease token, status leased and a lease that
-- has not expired. Each row carries its own backoff and normalized error
-- code. It returns the attempt ids it finished as retryable; a row whose
-- fence does not hold is absent (that lease is lost, the others are not).
--
-- Same plan settings as outbox.ack_delivery_batch (00097): one generic,
-- probe-only plan per session (primary-key probes, updates by row id).
-- SECURITY INVOKER: the dispatcher role's own UPDATE and INSERT grants apply,
-- and the transition guard checks every row it writes.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION outbox.retry_delivery_batch(
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
REVOKE ALL ON FUNCTION outbox.retry_delivery_batch(text[], uuid[], uuid[], uuid[], bigint[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox.retry_delivery_batch(text[], uuid[], uuid[], uuid[], bigint[], text[])
  TO oceanway_dispatcher;

-- +goose Down
DROP FUNCTION outbox.retry_delivery_batch(text[], uuid[], uuid[], uuid[], bigint[], text[]);
