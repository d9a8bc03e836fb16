-- The stored receipt of an event applied before. $1 event id.
SELECT envelope_sha256, body FROM bench.receipts WHERE event_id = $1
