-- name: ReceiptLookupForUpdate :one
-- The stored receipt of an event applied before, locked until the
-- delivery's transaction ends (concurrent duplicates serialize here).
SELECT envelope_sha256, body FROM outboxtest.receipts WHERE event_id = @event_id FOR UPDATE;

-- name: ReceiptInsert :exec
INSERT INTO outboxtest.receipts (event_id, envelope_sha256, body) VALUES (@event_id, @envelope_sha256, @body);

-- name: EffectInsert :exec
-- The consumer's effect; its primary key makes a second apply fail loudly.
INSERT INTO outboxtest.effects (event_id) VALUES (@event_id);

-- name: EffectCounts :one
SELECT count(*) AS total, count(DISTINCT event_id) AS distinct_events FROM outboxtest.effects;
