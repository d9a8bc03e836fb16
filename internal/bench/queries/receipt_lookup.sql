-- name: ReceiptLookup :one
-- The stored receipt of an event applied before.
SELECT envelope_sha256, body FROM bench.receipts WHERE event_id = @event_id;
