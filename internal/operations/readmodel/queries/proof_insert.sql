-- name: ProofInsert :one
-- Persists one completeness proof manifest, stamped with the snapshot it
-- was computed in.
INSERT INTO operations.completeness_proofs (snapshot_id, projection_name, projection_version, query_definition_version,
    evaluated_at, database_snapshot, projection_completeness, reasons, inputs, inputs_fingerprint)
VALUES (@snapshot_id, @projection_name, @projection_version, @query_definition_version, transaction_timestamp(),
    pg_current_snapshot()::text, @projection_completeness, @reasons, @inputs, @inputs_fingerprint)
RETURNING evaluated_at, database_snapshot;
