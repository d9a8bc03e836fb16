-- name: OpenDeliveries
-- Deliveries still pending or leased, to the destinations in $1 (NULL: all),
-- for the quiescence poll: each status through its partial index (a leased
-- delivery always has its lease owner), so a poll reads the open deliveries,
-- not the acknowledged history (an IN over both statuses was a sequential
-- scan of the whole table, four times a second).
SELECT (SELECT count(*) FROM outbox.outbox_deliveries
         WHERE status = 'pending' AND ($1::text[] IS NULL OR destination = ANY($1::text[])))
     + (SELECT count(*) FROM outbox.outbox_deliveries
         WHERE status = 'leased' AND lease_owner IS NOT NULL AND ($1::text[] IS NULL OR destination = ANY($1::text[])));
