-- Insert the receipt unless the event was applied before; one statement,
-- one transaction. Zero rows affected means "compare with the stored one".
-- $1 event id, $2 consumer name, $3 envelope sha256, $4 receipt body.
INSERT INTO bench.receipts (event_id, consumer_name, envelope_sha256, body)
VALUES ($1, $2, $3, $4)
ON CONFLICT (event_id) DO NOTHING
