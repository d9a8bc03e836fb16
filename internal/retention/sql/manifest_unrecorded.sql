-- Whether a manifest of this database describes no recorded run: its digest
-- is not in outbox.retention_runs and every event it lists is still hot with
-- the digest it archived (the controlled delete never ran for it).
SELECT NOT EXISTS (SELECT 1 FROM outbox.retention_runs r WHERE r.manifest_sha256 = @manifest_sha256::text)
   AND (SELECT count(*) FROM unnest(@event_ids::uuid[], @event_sha256::text[]) AS p(event_id, sha)
          JOIN outbox.outbox_events e ON e.event_id = p.event_id AND e.event_envelope_sha256 = p.sha)
       = cardinality(@event_ids::uuid[])
