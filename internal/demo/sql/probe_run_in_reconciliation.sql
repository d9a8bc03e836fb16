-- name: ProbeRunInReconciliation
-- A disputed attempt's last wait (issue 35): did the run's finalization
-- enter a reconciliation case instead (its fence reconciliation_required)?
-- Then no catch-up fence exists to block, and the provider's fix is what
-- closes the case.
SELECT EXISTS (SELECT 1 FROM billing.billing_finalization_fences
                WHERE run_id = $1::uuid AND coordination_state = 'reconciliation_required');
