-- name: QuarantineCount :many
-- Quarantined deliveries per destination (OBS-1, OBS-3). Nothing releases a
-- quarantine in this phase (OBS-4), so every row is one that still needs an
-- operator: the table holds only quarantines, never the delivered history.
SELECT destination, count(*) AS quarantined
FROM outbox.outbox_quarantine
GROUP BY destination;
