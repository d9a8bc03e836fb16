-- Delivery counts by status per destination, with the oldest open (pending
-- or leased) delivery. Exact counts: one scan of outbox.outbox_deliveries
-- per call, bounded by the statement timeout.
SELECT d.destination,
       count(*) FILTER (WHERE d.status = 'pending'),
       count(*) FILTER (WHERE d.status = 'pending' AND d.attempt_count > 0),
       count(*) FILTER (WHERE d.status = 'leased'),
       count(*) FILTER (WHERE d.status = 'leased' AND d.lease_expires_at <= now()),
       count(*) FILTER (WHERE d.status = 'acknowledged'),
       count(*) FILTER (WHERE d.status = 'quarantined'),
       count(*),
       min(d.created_at) FILTER (WHERE d.status IN ('pending', 'leased'))
  FROM outbox.outbox_deliveries d
 GROUP BY d.destination
 ORDER BY d.destination
