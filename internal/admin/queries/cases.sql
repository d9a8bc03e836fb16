-- name: CaseTablesPresent :one
-- Whether this database holds Operations' finalization cases and their
-- command chain (operations line 00009 and 00010: only the core database
-- does). The Cases page says "not installed" otherwise.
SELECT (to_regclass('operations.finalization_cases') IS NOT NULL
    AND to_regclass('operations.resolution_command_requests') IS NOT NULL
    AND to_regclass('operations.resolution_command_approvals') IS NOT NULL
    AND to_regclass('operations.resolution_decisions') IS NOT NULL)::boolean AS present;

-- name: CaseProjectionVersion :one
-- The active version of the projection that holds the cases, read through
-- the outbox-owned view outbox.active_projections (no row when none is
-- active). The case lists then name that exact version, so each is planned
-- on the cases table's own indexes.
SELECT p.projection_version
  FROM outbox.active_projections p
 WHERE p.projection_name = @projection_name;

-- name: CaseOpenTotal :one
-- How many cases of the projection version are open. The predicate is the
-- one of the partial unique index finalization_cases_one_open_per_fence
-- (WHERE state = 'open'): resolved history is never read.
SELECT count(*)
  FROM operations.finalization_cases c
 WHERE c.projection_name = @projection_name AND c.projection_version = @projection_version AND c.state = 'open';

-- name: CaseOpenList :many
-- The open cases of the projection version, oldest request first, at most
-- @row_limit (the caller asks one more than it shows). Read through the
-- partial index finalization_cases_one_open_per_fence (one open case per
-- fence), then ordered: the sort covers open cases only.
SELECT c.reconciliation_case_ref, c.reconciliation_generation, c.billing_finalization_fence_id,
       c.billing_reservation_id, c.run_id, c.reconciliation_reason_code,
       c.predecessor_reconciliation_case_ref, c.requested_at
  FROM operations.finalization_cases c
 WHERE c.projection_name = @projection_name AND c.projection_version = @projection_version AND c.state = 'open'
 ORDER BY c.requested_at, c.reconciliation_case_ref
 LIMIT @row_limit;

-- name: CaseResolvedList :many
-- The resolved cases of the projection version, most recently resolved
-- first, at most @row_limit (the caller asks one more than it shows), with
-- who resolved each and the resolution's operation (never NULL on a
-- resolved row: CHECK finalization_cases_resolution_fields). The operations
-- line has no index on resolved_at: the plan is a top-N sort (Limit over
-- Sort, memory bounded by @row_limit) of the version's resolved rows, so
-- its read grows with the resolved history. The statement timeout bounds
-- it (docs/admin.md, "Cases").
SELECT c.reconciliation_case_ref, c.reconciliation_generation, c.billing_finalization_fence_id,
       c.billing_reservation_id, c.run_id, c.reconciliation_reason_code,
       c.predecessor_reconciliation_case_ref, c.requested_at,
       c.resolved_at::timestamptz AS resolved_at,
       c.resolution_actor_workforce_principal_id::text AS resolved_by,
       c.resolution_operation_id::uuid AS resolution_operation_id
  FROM operations.finalization_cases c
 WHERE c.projection_name = @projection_name AND c.projection_version = @projection_version AND c.state = 'resolved'
 ORDER BY c.resolved_at DESC, c.reconciliation_case_ref
 LIMIT @row_limit;

-- name: RequestsOfCases :many
-- The resolution command chain of the given cases: every request with its
-- approval (by a second principal) and the Operations decision, if any,
-- in request order per case, at most @row_limit rows. The requests are
-- found by the index resolution_command_requests_case, the approval and the
-- decision by their primary keys (request_ref).
SELECT r.reconciliation_case_ref, r.request_ref, r.requester_workforce_principal_id,
       COALESCE(r.request_body::jsonb ->> 'justification', '')::text AS justification, r.requested_at,
       a.approval_ref, a.approver_workforce_principal_id, a.approved_at,
       d.decision_ref, d.actor_workforce_principal_id AS decided_by, d.decided_at
  FROM operations.resolution_command_requests r
  LEFT JOIN operations.resolution_command_approvals a ON a.request_ref = r.request_ref
  LEFT JOIN operations.resolution_decisions d ON d.request_ref = r.request_ref
 WHERE r.reconciliation_case_ref = ANY(@case_refs::text[])
 ORDER BY r.reconciliation_case_ref, r.requested_at, r.request_ref
 LIMIT @row_limit;
