-- name: CaseCounts
-- The Finalization reconciliation cases' end state and their invariants in
-- one snapshot: Operations' cases (active projection) and Billing's case
-- requests and resolutions, the command chain behind each resolution, the
-- two pairs' deliveries, and the time from a case to its resolution.
WITH c AS (SELECT c.* FROM operations.finalization_cases c
             JOIN outbox.active_projections p ON p.projection_name = c.projection_name AND p.projection_version = c.projection_version),
     rq AS (SELECT * FROM billing.finalization_reconciliation_requests),
     rs AS (SELECT * FROM billing.finalization_reconciliation_resolutions),
     ev AS (SELECT event_id, event_type FROM outbox.outbox_events
             WHERE event_type IN ('billing.finalization-reconciliation.case-requested@1',
                                  'billing.finalization-reconciliation-resolution.applied@1'))
SELECT
  (SELECT count(*) FROM c),
  (SELECT count(*) FROM c WHERE state = 'open'),
  (SELECT count(*) FROM c WHERE state = 'resolved'),
  (SELECT count(*) FROM c WHERE reconciliation_generation > 1),
  (SELECT COALESCE(max(reconciliation_generation), 0) FROM c),
  (SELECT count(DISTINCT billing_reservation_id) FROM c),
  (SELECT count(*) FROM rq),
  (SELECT count(*) FROM rs),
  (SELECT count(*) FROM operations.resolution_command_requests),
  (SELECT count(*) FROM operations.resolution_command_approvals),
  -- finalization grants only (the late settlement command's share the table)
  (SELECT count(*) FROM grants.command_grant_exchanges x
    WHERE NOT EXISTS (SELECT 1 FROM operations.late_command_decisions d WHERE d.candidate_ref = x.candidate_ref)),
  -- Billing case requests without their resolution (a fence still in a case)
  (SELECT count(*) FROM rq WHERE NOT EXISTS (SELECT 1 FROM rs
     WHERE rs.billing_finalization_fence_id = rq.billing_finalization_fence_id
       AND rs.reconciliation_generation = rq.reconciliation_generation)),
  -- Billing case requests and Operations cases that are not each other's
  (SELECT count(*) FROM rq WHERE NOT EXISTS (SELECT 1 FROM c WHERE c.reconciliation_case_ref = rq.reconciliation_case_ref))
    + (SELECT count(*) FROM c WHERE NOT EXISTS (SELECT 1 FROM rq WHERE rq.reconciliation_case_ref = c.reconciliation_case_ref)),
  -- the two pairs: one event per request and per resolution, each delivery acknowledged
  (SELECT count(*) FROM ev WHERE event_type = 'billing.finalization-reconciliation.case-requested@1')
    - (SELECT count(*) FROM rq WHERE EXISTS (SELECT 1 FROM ev WHERE ev.event_id = rq.event_id)),
  (SELECT count(*) FROM ev WHERE event_type = 'billing.finalization-reconciliation-resolution.applied@1')
    - (SELECT count(*) FROM rs WHERE EXISTS (SELECT 1 FROM ev WHERE ev.event_id = rs.event_id)),
  (SELECT count(*) FROM rq WHERE NOT EXISTS (SELECT 1 FROM ev WHERE ev.event_id = rq.event_id))
    + (SELECT count(*) FROM rs WHERE NOT EXISTS (SELECT 1 FROM ev WHERE ev.event_id = rs.event_id)),
  (SELECT count(*) FROM outbox.outbox_deliveries d JOIN ev USING (event_id) WHERE d.status <> 'acknowledged'),
  (SELECT count(*) FROM outbox.outbox_deliveries d JOIN ev USING (event_id)),
  -- every resolution through the whole chain: its grant consumed once and
  -- issued by Core's exchange, and Operations' decision of that case on a
  -- request approved by another principal than its requester
  (SELECT count(*) FROM rs WHERE NOT EXISTS (SELECT 1 FROM billing.consumed_command_grants g WHERE g.grant_jti = rs.grant_jti)
      OR NOT EXISTS (SELECT 1 FROM grants.command_grant_exchanges x WHERE x.grant_jti = rs.grant_jti)
      OR NOT EXISTS (SELECT 1 FROM operations.resolution_decisions d
                       JOIN operations.resolution_command_approvals a USING (request_ref)
                       JOIN operations.resolution_command_requests r USING (request_ref)
                      WHERE d.reconciliation_case_ref = (SELECT rq.reconciliation_case_ref FROM rq
                              WHERE rq.billing_finalization_fence_id = rs.billing_finalization_fence_id
                                AND rq.reconciliation_generation = rs.reconciliation_generation)
                        AND d.actor_workforce_principal_id = rs.actor_workforce_principal_id
                        AND a.approver_workforce_principal_id <> r.requester_workforce_principal_id)),
  -- time from a case to its resolution (the two events' occurrence)
  (SELECT COALESCE(1000 * EXTRACT(EPOCH FROM percentile_cont(0.5) WITHIN GROUP (ORDER BY resolved_at - requested_at)), 0)
     FROM c WHERE state = 'resolved'),
  (SELECT COALESCE(1000 * EXTRACT(EPOCH FROM max(resolved_at - requested_at)), 0) FROM c WHERE state = 'resolved'),
  -- the reasons Billing entered the cases, as one JSON object
  (SELECT COALESCE(json_object_agg(reason_code, n), '{}')::text
     FROM (SELECT reason_code, count(*) AS n FROM rq GROUP BY 1) r);
