-- name: ProofLatest :one
-- The latest completed proof manifest of a projection version.
SELECT snapshot_id, query_definition_version, evaluated_at, database_snapshot, projection_completeness,
       reasons, inputs, inputs_fingerprint
  FROM operations.completeness_proofs
 WHERE projection_name = @projection_name AND projection_version = @projection_version
 ORDER BY evaluated_at DESC, snapshot_id DESC
 LIMIT 1;
