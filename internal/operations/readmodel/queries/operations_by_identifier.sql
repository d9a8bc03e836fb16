-- name: OperationsByIdentifier :many
-- Exact-identifier lookup: every operation an identifier (of any kind)
-- names, with the kinds it matched. Exact equality only.
SELECT array_agg(DISTINCT i.identifier_kind ORDER BY i.identifier_kind)::text[] AS kinds, sqlc.embed(s)
  FROM operations.identifier_index i
  JOIN operations.operation_summaries s
    ON s.projection_name = i.projection_name AND s.projection_version = i.projection_version AND s.run_id = i.run_id
 WHERE i.projection_name = @projection_name AND i.projection_version = @projection_version
   AND i.identifier_value = @identifier
 GROUP BY s.projection_name, s.projection_version, s.run_id
 ORDER BY s.run_id;
