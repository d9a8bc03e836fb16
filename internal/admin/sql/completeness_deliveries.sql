-- Outbox-side completeness of one producer database, delivery level: the
-- mandatory deliveries per destination by open / quarantined / acknowledged.
SELECT d.destination,
       count(*),
       count(*) FILTER (WHERE d.status IN ('pending', 'leased')),
       count(*) FILTER (WHERE d.status = 'quarantined'),
       count(*) FILTER (WHERE d.status = 'acknowledged')
  FROM outbox.outbox_deliveries d
 WHERE d.mandatory
 GROUP BY d.destination
 ORDER BY d.destination
