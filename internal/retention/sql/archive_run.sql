-- The one controlled path out of the hot tables (outbox migration 00020).
SELECT outbox.retention_archive(@run_id::uuid, @manifest_sha256::text, @cutoff::timestamptz, @verified_at::timestamptz,
  @event_ids::uuid[], @event_sha256::text[], @deliveries::bigint, @attempt_starts::bigint, @attempt_finishes::bigint)
