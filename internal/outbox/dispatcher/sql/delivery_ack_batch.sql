-- Fenced acks (OB-CLAIM-2, OB-DELIVER-5) and the controlled published_at
-- function (OB-PUB-1) of a batch of deliveries in one call:
-- outbox.ack_and_publish_batch (outbox migration 00100) runs
-- outbox.ack_delivery_batch (00097), which sets each row acknowledged with
-- its frozen ack receipt type and quadruple and appends its single success
-- finish, each row under its own fence (destination, event id, attempt id,
-- lease token, a lease still valid), then outbox.record_publication_batch
-- over the rows whose fence held, with the ack's own destination, event id
-- and receipt type. It returns the attempt ids of the rows it acknowledged
-- (a row whose fence does not hold is absent: lease lost for that one only).
-- Sent alone it is its own (implicit) transaction: one round trip per batch.
-- Kept out of sqlc (queries/) with its named arguments so the parallel
-- arrays stay in one place (ackBatchColumns).
-- uuid arrays are bound as text[] and cast here: pgx has no binary plan for
-- []string into uuid[] and would fail one (and format an error) per call
-- before falling back to text.
SELECT a.attempt_id::text FROM outbox.ack_and_publish_batch(@destinations::text[], @event_ids::text[]::uuid[],
  @attempt_ids::text[]::uuid[], @lease_tokens::text[]::uuid[], @consumer_names::text[],
  @receipt_types::text[], @receipt_refs::text[],
  @receipt_schema_versions::text[], @receipt_digest_algorithm_versions::text[],
  @receipt_digests::text[], @envelope_digest_algorithm_versions::text[],
  @envelope_sha256s::text[], @ack_destinations::text[], @ack_event_ids::text[]::uuid[],
  @ack_receipt_types::text[]) AS a(attempt_id);
