-- name: ReceiptLookupMany :many
-- The stored receipts of events applied before (ids as text[], see
-- ReceiptInsertBatch).
SELECT event_id, envelope_sha256, body FROM bench.receipts WHERE event_id = ANY(sqlc.arg(event_ids)::text[]::uuid[]);
