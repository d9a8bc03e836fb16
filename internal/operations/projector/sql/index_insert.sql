-- name: IndexInsert
-- Exact-identifier index entries → operation (run id).
-- $1 projection name, $2 projection version, $3 kinds, $4 values, $5 run id.
INSERT INTO operations.identifier_index (projection_name, projection_version, identifier_kind, identifier_value, run_id)
SELECT $1, $2, k, v, $5 FROM unnest($3::text[], $4::uuid[]) AS t(k, v)
ON CONFLICT DO NOTHING
