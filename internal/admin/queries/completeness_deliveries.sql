-- name: CompletenessDeliveries :many
-- Outbox-side completeness of one producer database, delivery level: the
-- mandatory deliveries per destination by open / quarantined / acknowledged,
-- read through the outbox-owned view outbox.delivery_facts (00090).
SELECT f.destination,
       count(*) AS mandatory,
       count(*) FILTER (WHERE f.status IN ('pending', 'leased')) AS open,
       count(*) FILTER (WHERE f.status = 'quarantined') AS quarantined,
       count(*) FILTER (WHERE f.status = 'acknowledged') AS acknowledged
  FROM outbox.delivery_facts f
 WHERE f.mandatory
 GROUP BY f.destination
 ORDER BY f.destination;
