-- name: QuarantineTotal :one
-- How many quarantine rows exist (the recent list is bounded).
SELECT count(*) FROM outbox.outbox_quarantine;
