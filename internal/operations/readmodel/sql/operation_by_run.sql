-- name: OperationByRun
-- One operation summary by its run id.
-- $1 projection name, $2 projection version, $3 run id.
SELECT {{summary_columns}}
  FROM operations.operation_summaries s
 WHERE s.projection_name = $1 AND s.projection_version = $2 AND s.run_id = $3
