-- name: DefinitionList :many
-- Every registered Delivery Set Definition, the active one first, then by
-- version descending: the definition quadruple, registry status and times,
-- member count and the destinations its members route to.
SELECT v.delivery_set_version, v.delivery_set_definition_schema_version,
       v.delivery_set_definition_digest_algorithm_version, v.delivery_set_definition_digest,
       v.status, v.activated_at, v.retired_at, v.registered_at, v.source_release,
       v.applicable_event_count, v.member_count,
       COALESCE((SELECT array_agg(DISTINCT m.destination ORDER BY m.destination)
                   FROM outbox.delivery_set_members m
                  WHERE m.delivery_set_version = v.delivery_set_version), '{}'::text[])::text[] AS destinations
  FROM outbox.delivery_set_versions v
 ORDER BY (v.status = 'active') DESC, v.delivery_set_version DESC;
