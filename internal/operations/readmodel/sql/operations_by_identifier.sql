-- name: OperationsByIdentifier
-- Exact-identifier lookup: every operation an identifier (of any kind)
-- names, with the kinds it matched. Exact equality only.
-- $1 projection name, $2 projection version, $3 identifier.
SELECT array_agg(DISTINCT i.identifier_kind ORDER BY i.identifier_kind), {{summary_columns}}
  FROM operations.identifier_index i
  JOIN operations.operation_summaries s
    ON s.projection_name = i.projection_name AND s.projection_version = i.projection_version AND s.run_id = i.run_id
 WHERE i.projection_name = $1 AND i.projection_version = $2 AND i.identifier_value = $3
 GROUP BY s.projection_name, s.projection_version, s.run_id
 ORDER BY s.run_id
