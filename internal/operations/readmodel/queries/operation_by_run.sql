-- name: OperationByRun :one
-- One operation summary by its run id.
SELECT sqlc.embed(s)
  FROM operations.operation_summaries s
 WHERE s.projection_name = @projection_name AND s.projection_version = @projection_version AND s.run_id = @run_id;
