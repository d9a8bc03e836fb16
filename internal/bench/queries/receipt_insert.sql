-- name: ReceiptInsert :execrows
-- Insert the receipt unless the event was applied before; one statement,
-- one transaction. Zero rows affected means "compare with the stored one".
INSERT INTO bench.receipts (event_id, consumer_name, envelope_sha256, body)
VALUES (@event_id, @consumer_name, @envelope_sha256, @body)
ON CONFLICT (event_id) DO NOTHING;
