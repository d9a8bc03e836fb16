-- name: PublicationRecordBatch :exec
-- The controlled published_at function (OB-PUB-1) for every ack of a batch
-- that passed its fence, in event_id order so concurrent batches take the
-- event locks in one order. Same parallel arrays as ack_batch.sql. The
-- function answers not_complete or complete and raises when an ack is
-- invalid.
SELECT outbox.record_publication(i.event_id, i.destination, i.consumer_name, i.attempt_id, i.lease_token, i.receipt_type,
  i.receipt_ref, i.receipt_schema_version, i.receipt_digest_algorithm_version, i.receipt_digest,
  i.envelope_digest_algorithm_version, i.envelope_sha256)
FROM (
  SELECT * FROM ROWS FROM (unnest(sqlc.arg(destinations)::text[]), unnest(sqlc.arg(event_ids)::uuid[]),
    unnest(sqlc.arg(attempt_ids)::uuid[]), unnest(sqlc.arg(lease_tokens)::uuid[]), unnest(sqlc.arg(consumer_names)::text[]),
    unnest(sqlc.arg(receipt_types)::text[]), unnest(sqlc.arg(receipt_refs)::text[]),
    unnest(sqlc.arg(receipt_schema_versions)::text[]), unnest(sqlc.arg(receipt_digest_algorithm_versions)::text[]),
    unnest(sqlc.arg(receipt_digests)::text[]), unnest(sqlc.arg(envelope_digest_algorithm_versions)::text[]),
    unnest(sqlc.arg(envelope_sha256s)::text[]))
    AS i(destination, event_id, attempt_id, lease_token, consumer_name, receipt_type, receipt_ref, receipt_schema_version,
         receipt_digest_algorithm_version, receipt_digest, envelope_digest_algorithm_version, envelope_sha256)
  ORDER BY event_id, destination
  OFFSET 0
) i;
