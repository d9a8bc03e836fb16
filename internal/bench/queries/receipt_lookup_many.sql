-- name: ReceiptLookupMany :many
-- The stored receipts of events applied before.
SELECT event_id, envelope_sha256, body FROM bench.receipts WHERE event_id = ANY(@event_ids::uuid[]);
