-- name: ProofLatest
-- The latest completed proof manifest of a projection version.
-- $1 projection name, $2 projection version.
SELECT snapshot_id::text, query_definition_version, evaluated_at, database_snapshot, projection_completeness,
       reasons, inputs, inputs_fingerprint
  FROM operations.completeness_proofs
 WHERE projection_name = $1 AND projection_version = $2
 ORDER BY evaluated_at DESC, snapshot_id DESC
 LIMIT 1
