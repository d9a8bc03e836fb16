-- The controlled published_at function (OB-PUB-1) for every ack of a batch
-- that passed its fence, in event_id order so concurrent batches take the
-- event locks in one order. Same parallel arrays as ack_batch.sql.
SELECT outbox.record_publication(i.event_id, i.destination, i.consumer_name, i.attempt_id, i.lease_token, i.receipt_type,
  i.receipt_ref, i.receipt_schema_version, i.receipt_digest_algorithm_version, i.receipt_digest,
  i.envelope_digest_algorithm_version, i.envelope_sha256)
FROM (
  SELECT * FROM unnest($1::text[], $2::uuid[], $3::uuid[], $4::uuid[], $5::text[], $6::text[], $7::text[], $8::text[],
    $9::text[], $10::text[], $11::text[], $12::text[])
    AS i(destination, event_id, attempt_id, lease_token, consumer_name, receipt_type, receipt_ref, receipt_schema_version,
         receipt_digest_algorithm_version, receipt_digest, envelope_digest_algorithm_version, envelope_sha256)
  ORDER BY event_id, destination
  OFFSET 0
) i
