-- Fenced retries (OB-DELIVER-2, OB-CLAIM-2) of a batch of deliveries in one
-- call: outbox.retry_delivery_batch (outbox migration 00098) appends each
-- row's retryable finish and moves it back to pending after its own backoff,
-- each row under its own fence; it returns the attempt ids it finished (a row
-- whose fence does not hold is absent: lease lost for that one only). Kept
-- out of sqlc for the same reasons as delivery_ack_batch.sql.
SELECT a.attempt_id::text FROM outbox.retry_delivery_batch(@destinations::text[], @event_ids::text[]::uuid[],
  @attempt_ids::text[]::uuid[], @lease_tokens::text[]::uuid[], @backoff_ms::bigint[], @error_codes::text[])
  AS a(attempt_id);
