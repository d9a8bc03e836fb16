-- Delivery counts by status per destination, with the oldest open (pending
-- or leased) delivery. Destinations of the active definition that have no
-- deliveries yet are listed with zeros. Exact counts: one scan of
-- outbox.outbox_deliveries per call, bounded by the statement timeout.
WITH counts AS (
  SELECT d.destination,
         count(*) FILTER (WHERE d.status = 'pending')                                   AS pending,
         count(*) FILTER (WHERE d.status = 'pending' AND d.attempt_count > 0)           AS retrying,
         count(*) FILTER (WHERE d.status = 'leased')                                    AS leased,
         count(*) FILTER (WHERE d.status = 'leased' AND d.lease_expires_at <= now())    AS lease_expired,
         count(*) FILTER (WHERE d.status = 'acknowledged')                              AS acknowledged,
         count(*) FILTER (WHERE d.status = 'quarantined')                               AS quarantined,
         count(*)                                                                       AS total,
         min(d.created_at) FILTER (WHERE d.status IN ('pending', 'leased'))             AS oldest_open_created_at
    FROM outbox.outbox_deliveries d
   GROUP BY d.destination
), active_destinations AS (
  SELECT DISTINCT m.destination
    FROM outbox.delivery_set_members m
    JOIN outbox.delivery_set_versions v ON v.delivery_set_version = m.delivery_set_version
   WHERE v.status = 'active'
), destinations AS (
  SELECT destination FROM counts
  UNION
  SELECT destination FROM active_destinations
)
SELECT x.destination,
       COALESCE(c.pending, 0), COALESCE(c.retrying, 0), COALESCE(c.leased, 0), COALESCE(c.lease_expired, 0),
       COALESCE(c.acknowledged, 0), COALESCE(c.quarantined, 0), COALESCE(c.total, 0),
       c.oldest_open_created_at
  FROM destinations x
  LEFT JOIN counts c ON c.destination = x.destination
 ORDER BY x.destination
