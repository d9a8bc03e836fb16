// Package billing is the Billing owner in the core database (ADR-031
// Billing finalization; BI-1, BFC-*): the reservation's finalization fence
// and its Work, the reservation's terminal states, an append-only
// double-entry ledger, and the one transaction that commits a successful
// finalization.
//
// # What it owns (schema billing, migration line "billing")
//
//   - billing_finalization_fences: one per reservation, created by the
//     admission transaction through OpenFinalizationTx (the tables moved
//     here from admission). States: pending_evaluation (bound to the latest
//     generation's one Work), awaiting_finalization (no Work, a visible
//     waiting_reason), reconciliation_required (a case generation bound to
//     the identity Operations reserved; left only through its applied
//     resolution, BL003; docs/reconciliation.md) and committed
//     (absorbing). Every update moves the revision by exactly one; the
//     trigger billing.guard_fence refuses any other transition (BL002).
//   - billing_finalization_trigger_snapshots and billing_finalization_works:
//     content-addressed, one per generation; a Work's content never changes,
//     its state goes waiting|pending → evaluated | committed | superseded.
//   - closure_watermarks (the one applied closure event with its
//     coordinator receipt) and settlement_input_watermarks (monotonic per
//     settlement dimension).
//   - reservation_states: reserved → settled | released, both absorbing;
//     settled + released = reserved.
//   - the ledger: posting groups of lines (numeric amounts, never floats,
//     each tagged with the reservation's economic identity), written only
//     by three controlled database functions that derive the lines from
//     the justifying fact (hold, committed finalization, refund
//     transition); at commit every group proves itself balanced (BL004),
//     exactly its fact's amounts (BL006) and no balance negative (BL010);
//     balances are a view; a finalized reservation's ledger must hold
//     exactly settled + released = reserved (BL005). Nothing in the ledger
//     is ever updated, deleted or truncated (BL001). docs/billing.md lists
//     every guard of migration 00040 (issue 30).
//   - finalization_evaluations (blocked / reconciliation_deferred /
//     reconciliation_required, with a reason), finalization_committed
//     (BillingFinalizationCommitted@1, one per reservation) and
//     coordinator_receipts.
//   - finalization_reconciliation_requests (one per case generation),
//     consumed_command_grants, finalization_reconciliation_resolutions
//     (FinalizationReconciliationResolutionApplied@1) and
//     resolution_watermarks (the coordinator's reopening).
//
// The settlement catch-up after a successful finalization (catch-up fences,
// their Work, transitions and late settlement exposures) is package
// internal/billing/catchup, which imports this one; this package never
// imports it.
//
// # What it never does
//
// It never reads another owner's tables (Execution, Gateway, Metering live
// in other databases and answer through their owner reads), never writes a
// ledger line outside CommitFinalizationTx / OpenFinalizationTx and
// PostSettlementTransitionTx (through which the settlement catch-up posts a
// refund transition), and never closes a case or moves money for one: a
// reconciliation_required decision enters the case (RecordReconciliationTx),
// and the case's applied resolution (ApplyResolutionTx, with Core's grant)
// only makes the coordinator re-evaluate.
//
// # The commit (CommitFinalizationTx)
//
// In the caller's transaction: lock the fence, require its active
// generation and the applied closure, lock the reservation, then write the
// finalization postings, append billing.finalization.committed@1 (with its
// deliveries, release.Appender), insert the content-addressed
// BillingFinalizationCommitted@1 (bound to the fence revision, the Work, the
// closure event and its coordinator receipt, the input manifest, the
// validation bundle and the decision), and move reservation, Work and fence
// to their terminal states. A replay of the same decision returns the
// stored fact byte for byte; a different one is refused (Go:
// ErrAlreadyFinalized; PostgreSQL: unique per reservation).
package billing
