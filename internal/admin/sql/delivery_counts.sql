-- Delivery counts by status per destination, with the oldest open (pending
-- or leased) delivery. Exact counts: one scan of outbox.outbox_deliveries
-- per call, bounded by the statement timeout.
-- Loaded, not sqlc: sqlc cannot type the nullable min() (it answers interface{}).
SELECT d.destination,
       count(*) FILTER (WHERE d.status = 'pending') AS pending,
       count(*) FILTER (WHERE d.status = 'pending' AND d.attempt_count > 0) AS retrying,
       count(*) FILTER (WHERE d.status = 'leased') AS leased,
       count(*) FILTER (WHERE d.status = 'leased' AND d.lease_expires_at <= now()) AS lease_expired,
       count(*) FILTER (WHERE d.status = 'acknowledged') AS acknowledged,
       count(*) FILTER (WHERE d.status = 'quarantined') AS quarantined,
       count(*) AS total,
       -- issue 18: pending deliveries waiting on a deployment fact (the
       -- consumer does not support the pair, or the destination has no
       -- consumer in the dispatching process: transport.CodeNoConsumer,
       -- projector.CodeUnsupportedPair); they back off up to the maximum.
       count(*) FILTER (WHERE d.status = 'pending'
                          AND d.last_error_code IN ('no_consumer', 'projector_pair_unsupported')) AS unsupported_waiting,
       max(d.available_at) FILTER (WHERE d.status = 'pending'
                          AND d.last_error_code IN ('no_consumer', 'projector_pair_unsupported')) AS unsupported_next_retry_at,
       min(d.created_at) FILTER (WHERE d.status IN ('pending', 'leased')) AS oldest_open_created_at
  FROM outbox.outbox_deliveries d
 GROUP BY d.destination
 ORDER BY d.destination
