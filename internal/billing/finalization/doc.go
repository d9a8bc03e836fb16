// Package finalization is the Billing finalization pipeline (issue 15 item
// 3; ADR-031 "Billing Finalization 使用三组完整验证", BI-1): the worker that
// turns a fence's runnable Work into one decision, one step at a time, each
// content-addressed and stored insert-or-compare.
//
// What one Work run does (Worker.ProcessOne), in one Billing transaction:
//
//  1. Claim: the first fence in pending_evaluation whose closure is applied
//     and whose active Work is pending, FOR UPDATE SKIP LOCKED (the claim
//     statement is the Work primitive's locked claim: internal/work, queue
//     billing_finalization, run by a work.Runner's slots). The fence row
//     stays locked for the transaction, so the generation, fence revision
//     and Work operation read here are the ones the commit writes under;
//     concurrent workers take other fences. Before the closure is applied
//     the Work is not runnable at all (closure_event_not_applied: no
//     Execution read ever happens for it).
//  2. Evaluate (Evaluate), reading the other owners only through directed,
//     versioned reads (ExecutionReads, MeteringReads, GatewayReads), never
//     their rows: readRunFinalizationPrecondition@1 gives the closed attempt
//     set; Metering answers each attempt's current settlement inputs and
//     the Gateway each dispatched attempt's usage dimensions. The
//     FinalizationInputManifest@1 lists, sorted, every attempt × charge
//     dimension with its current SettlementInputSnapshot@1, state, economic
//     identity, target and (dispatched only) availability; its ref derives
//     from its content.
//     Blocked (a visible wait): Execution not closed; an attempt without
//     input; a usage dimension without input; a pending input; an input the
//     coordinator has not recorded yet (its event is on its way and wakes
//     the fence); Metering or the Gateway answering not current / not found.
//     Reconciliation required (recorded only, issue 15): a conflicting
//     input or record, another economic identity, an Execution conflict, or
//     Σ targets above the reservation (then no receipt is even requested).
//  3. Receipts, bound to the manifest: readRunExecutionFinalization@1 (one
//     RunExecutionFinalizationReceipt@1), validateSettlementInputCurrent with
//     purpose finalization per dimension (operation derived from the
//     finalization operation, the dimension and the manifest digest), and
//     readEvidenceAvailabilitySnapshot@1 per distinct availability — none
//     for a not-dispatched dimension.
//  4. FinalizationValidationBundle@1 (successes only) and
//     BillingFinalizationDecision@1: settle_and_release_remainder (settled =
//     Σ targets, released = reserved − settled, exact decimals) or
//     release_all (no billable input), else blocked / reconciliation_required.
//  5. Store every step (StoreTx), then BillingLedger: CommitFinalizationTx
//     (ledger, reservation and fence terminal states, the committed fact and
//     billing.finalization.committed@1) plus one settlement catch-up fence
//     per dimension (catchup.OpenFencesTx); or RecordEvaluationTx (blocked:
//     the fence waits with outcome:reason); or, for reconciliation_required
//     with BillingLedger.Cases set, the case identity reserved with
//     Operations and RecordReconciliationTx (the fence enters the case,
//     docs/reconciliation.md; without Cases it is recorded as
//     reconciliation_deferred and waits).
//
// Any failure rolls the whole transaction back: no step, posting or fact
// stays, the Work stays runnable, and because every object's time field is
// outside its digest and refs derive from content, the retry writes the same
// objects. The finalization operation of the objects is derived from the
// fence (billing_finalization_operation@1), so every order of inputs that
// reaches the same closed inputs reaches the same manifest, bundle and
// decision; the Work generation's own operation id keys the Billing core's
// evaluation and committed rows.
//
// The database is the second guard: the step tables are insert-only
// (trigger BL001; the billing role has no UPDATE/DELETE grant), a decision
// row carries amounts exactly for the successes and PostgreSQL checks
// settled + released = reserved and settled ≤ reserved.
package finalization
