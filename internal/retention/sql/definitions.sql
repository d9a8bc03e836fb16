-- The definitions an archive segment's events froze, one document per
-- version: the registry row without its mutable registry metadata (status,
-- activated_at, retired_at are not part of the definition), its members and
-- the destination bindings they reference. definition_canonical_json inside
-- is what `retention verify` re-digests with the contracts.
SELECT v.delivery_set_version,
       jsonb_build_object(
         'kind', 'oceanway.outbox-archive-definition@1',
         'version', to_jsonb(v) - '{status,activated_at,retired_at}'::text[],
         'members', (SELECT coalesce(jsonb_agg(to_jsonb(m) ORDER BY m.event_type, m.schema_version, m.destination), '[]'::jsonb)
                       FROM outbox.delivery_set_members m WHERE m.delivery_set_version = v.delivery_set_version),
         'bindings', (SELECT coalesce(jsonb_agg(to_jsonb(b) ORDER BY b.destination), '[]'::jsonb)
                        FROM outbox.destination_bindings b
                       WHERE b.destination IN (SELECT m.destination FROM outbox.delivery_set_members m
                                                WHERE m.delivery_set_version = v.delivery_set_version))
       )::text AS document
  FROM outbox.delivery_set_versions v
 WHERE v.delivery_set_version = ANY (@versions::bigint[])
 ORDER BY v.delivery_set_version
