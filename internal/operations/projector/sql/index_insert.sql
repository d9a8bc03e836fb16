-- name: IndexInsert
-- Exact-identifier index entries → operation (run id). Loaded, not sqlc:
-- sqlc does not know the multi-array unnest, and it is batched.
INSERT INTO operations.identifier_index (projection_name, projection_version, identifier_kind, identifier_value, run_id)
SELECT @projection_name, @projection_version, k, v, @run_id FROM unnest(@kinds::text[], @values::uuid[]) AS t(k, v)
ON CONFLICT DO NOTHING
