-- name: PublicationRecordBatch :exec
-- The controlled published_at function (OB-PUB-1) over every ack of a batch
-- that passed its fence, in one call of outbox.record_publication_batch (migration 00095): same parallel arrays
-- as DeliveryAckBatch. The function answers complete or not_complete per
-- ack and raises when any ack is invalid.
-- uuid arrays are bound as text[] and cast here: pgx has no binary plan for
-- []string into uuid[] and would fail one (and format an error) per call
-- before falling back to text.
SELECT count(*) FROM outbox.record_publication_batch(sqlc.arg(event_ids)::text[]::uuid[], sqlc.arg(destinations)::text[],
  sqlc.arg(consumer_names)::text[], sqlc.arg(attempt_ids)::text[]::uuid[], sqlc.arg(lease_tokens)::text[]::uuid[],
  sqlc.arg(receipt_types)::text[], sqlc.arg(receipt_refs)::text[], sqlc.arg(receipt_schema_versions)::text[],
  sqlc.arg(receipt_digest_algorithm_versions)::text[], sqlc.arg(receipt_digests)::text[],
  sqlc.arg(envelope_digest_algorithm_versions)::text[], sqlc.arg(envelope_sha256s)::text[]);
