-- name: WaitingReasons
-- Reservations waiting as reconciliation_deferred (evaluated by a worker
-- that enters no case), by the reason their fence shows
-- (reconciliation_deferred:<reason code>), as one JSON object.
SELECT COALESCE(json_object_agg(reason, n), '{}')::text
FROM (SELECT substr(waiting_reason, length('reconciliation_deferred:') + 1) AS reason, count(*) AS n
        FROM billing.billing_finalization_fences
       WHERE coordination_state = 'awaiting_finalization' AND waiting_reason LIKE 'reconciliation_deferred:%'
       GROUP BY 1) r;
