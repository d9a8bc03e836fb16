-- name: StatusVersions
-- Every version of the projection that has receipts or a shadow build, with
-- its receipt count, the source events it has no receipt for, unresolved
-- gaps and unsupported records.
WITH v AS (
  SELECT DISTINCT projection_version FROM operations.applied_receipts WHERE projection_name = @projection_name
  UNION
  SELECT projection_version FROM operations.shadow_builds WHERE projection_name = @projection_name
  UNION
  SELECT projection_version FROM outbox.active_projections WHERE projection_name = @projection_name
)
SELECT v.projection_version,
  (SELECT count(*) FROM operations.applied_receipts r
    WHERE r.projection_name = @projection_name AND r.projection_version = v.projection_version) AS receipts,
  (SELECT count(*) FROM outbox.projection_source_events s
    WHERE s.destination = 'core_operations' AND s.projection_name = @projection_name AND NOT EXISTS (
      SELECT 1 FROM operations.applied_receipts r WHERE r.consumer_name = s.consumer_name
         AND r.projection_name = @projection_name AND r.projection_version = v.projection_version AND r.event_id = s.event_id)) AS missing,
  (SELECT count(*) FROM operations.revision_gaps g
    WHERE g.projection_name = @projection_name AND g.projection_version = v.projection_version AND g.resolved_at IS NULL) AS unresolved_gaps,
  (SELECT count(*) FROM operations.unsupported_events u
    WHERE u.projection_name = @projection_name AND u.projection_version = v.projection_version AND u.resolved_at IS NULL) AS unsupported
  FROM v ORDER BY v.projection_version
