-- name: ProofInsert
-- Persists one completeness proof manifest, stamped with the snapshot it
-- was computed in.
-- $1 snapshot id, $2 projection name, $3 projection version, $4 query
-- definition version, $5 projection completeness, $6 reasons, $7 inputs, $8 inputs fingerprint.
INSERT INTO operations.completeness_proofs (snapshot_id, projection_name, projection_version, query_definition_version,
    evaluated_at, database_snapshot, projection_completeness, reasons, inputs, inputs_fingerprint)
VALUES ($1, $2, $3, $4, transaction_timestamp(), pg_current_snapshot()::text, $5, $6, $7, $8)
RETURNING evaluated_at, database_snapshot
