-- name: CasesOpen
-- The open Finalization reconciliation cases of the active Operations
-- projection (what an operator lists), oldest first, with the case identity
-- Operations reserved (an operator's fallback evidence).
SELECT c.reconciliation_case_ref, c.reconciliation_generation, c.billing_reservation_id::text,
       c.case_identity_ref, c.case_identity_schema_version, c.case_identity_digest_algorithm_version, c.case_identity_digest
  FROM operations.finalization_cases c
  JOIN outbox.active_projections p ON p.projection_name = c.projection_name AND p.projection_version = c.projection_version
 WHERE c.state = 'open'
 ORDER BY c.requested_at, c.reconciliation_case_ref;
