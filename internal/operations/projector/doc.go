// Package projector is the Operations projector: the core_operations
// consumer (operations_projector) that builds the Operations read model in
// schema operations of the core database (OPS-1..OPS-5).
//
// # One transaction per event (OPS-1)
//
// The shared inbox (internal/inbox) verifies the delivery strictly (member,
// exact pair, envelope, digest), locks the receipt key and answers
// duplicates with the first receipt. For a new event, ApplyTx runs the six
// steps in the inbox's transaction:
//
//  1. verified schema/envelope/digest (inbox) and the pair's own checks;
//  2. lock or create the projection aggregate (aggregateType, aggregateId)
//     of the frozen projection target;
//  3. check the aggregate revision: revision = applied+1 is applied; a
//     higher revision is a gap; a revision at or below applied that has no
//     receipt of this event is a second event claiming one revision
//     (non_retryable aggregate_revision_conflict);
//  4. write the projection mutation (operation summary, Wallet-first
//     reservation, finalization), the mutation log row (projected_events)
//     and the exact-identifier index;
//  5. the inbox writes the OperationsProjectionAppliedReceipt@1 built here
//     for the frozen member's projection target (never one the projector
//     chose);
//  6. FinishTx writes the projection build summary.
//
// ConsumeBatch runs the same steps for a batch of deliveries in one
// transaction, each event in its own savepoint (inbox.ConsumeBatch); the
// active claim gate is taken once first and the build summary written once
// last (BeginBatchTx, FinishBatchTx).
//
// # Revision gaps (OPS-2)
//
// A gap records (or re-observes) a row in operations.revision_gaps, writes no
// receipt and answers inbox.Wait with CodeRevisionGapWait: the transaction
// commits the gap record, the dispatcher keeps the delivery pending and
// redelivers it with backoff. When the missing revision is applied the
// waiting event's next redelivery applies it and resolves its gap row in the
// same transaction. Nothing is lost: the delivery never leaves pending
// (retryable outcomes never finish a delivery), and the gap row keeps the
// waiting event visible to operators and to the completeness proof until it
// is applied.
//
// # Wallet before Run (OPS-3)
//
// wallet.reserved@2.0 whose Run has not been projected goes to
// pending_unlinked_reservations and is acknowledged; no operation summary is
// created from it. run.created@2.0 creates the summary; if a Wallet-first
// reservation is waiting it is linked only after the causal and equality
// checks (same run, reservation, account, RunAdmissionManifest quadruple,
// tenant, correlation and operation ids; the wallet's causationId, when
// present, is the Run event). A failed check is non_retryable
// (reservation_link_conflict) and writes nothing. A summary whose wallet
// event has not arrived shows reservation_state=source_delayed with empty
// reservation fields. Both events take advisory locks on the run and the
// reservation ids (in that order), so a concurrent Run-first and
// Wallet-first projection of one operation cannot miss each other.
//
// # Finalization reconciliation cases (OP-1, issue 31)
//
// billing.finalization-reconciliation.case-requested@1 (aggregate
// billing_finalization_reconciliation_case_request, revision 1) asks
// Operations to create the case Billing reserved an identity for;
// billing.finalization-reconciliation-resolution.applied@1 (aggregate
// billing_finalization_reconciliation_resolution, revision 1) is Billing's
// fact that closes it. The two deliveries have no order between them, and a
// re-evaluation's next generation may be requested before the previous
// generation's resolution is projected (ADR-031). Before any projection
// lock each event is verified twice: against the identity Operations
// reserved (cases.IdentityByCaseRequestTx: identity quadruple, case ref,
// generation, fence, reservation, account, run, tenant, predecessor; a
// mismatch or an identity never reserved is non_retryable
// finalization_case_identity_conflict), then through its event-bound
// Billing read (Config.FinalizationDecisionReads,
// readBillingFinalizationDecisionForOperations; Config.ResolutionAppliedReads,
// readFinalizationReconciliationResolutionAppliedForOperations), classified
// like every owner read (unwired or error: owner_read_unavailable,
// not_found: owner_fact_not_readable, both retryable with nothing written;
// conflicting: non_retryable). Then, under the event's aggregate lock and a
// per-fence case lock (an advisory lock per projection and fence both pairs
// take, so two sessions delivering a fence's events concurrently see each
// other's commits):
//
//   - a request whose generation is 1, or whose direct predecessor's case is
//     resolved, materialises its case (finalization_cases): open, or resolved
//     at once when its verified resolution is waiting;
//   - a request whose predecessor is not resolved (or not materialised)
//     waits as a pending successor (pending_finalization_case_successors),
//     frozen with its identity, its predecessor's identity, the event's
//     envelope digest, decision, Work, generation and reason, and is
//     acknowledged with its receipt;
//   - a resolution closes its open case, or waits as a pending resolution
//     (pending_finalization_case_resolutions) when its request is not
//     materialised;
//   - whichever event closes generation N also materialises, in the same
//     transaction, the maximal contiguous chain of pending successors N+1,
//     N+2, … — each closed at once by its waiting resolution, until one stays
//     open. Taken pending rows stay as audit (consumed / materialized).
//
// So the cases materialise in generation order whatever the delivery
// order, and every ordering — online or in a shadow rebuild — ends in the
// same rows (the fingerprint leaves out only which event's transaction
// materialised or closed a case). The database holds the invariants: at
// most one open case per fence and projection (a partial unique index), a
// successor row references its predecessor's, a case moves open → resolved
// once and carries its whole resolution when resolved, a pending row is
// taken once (OP006), nothing is deleted (OP001), the projector's role may
// update only the columns that move.
//
// # Supported pairs
//
// run.created@2.0, wallet.reserved@2.0, billing.finalization.committed@1
// (aggregate billing_reservation, revision 2; verified through the Billing
// owner read readBillingFinalizationCommitted, see BillingReads),
// billing.settlement-transition.committed@1 (verified through
// readBillingSettlementTransition, see SettlementReads),
// billing.finalization-reconciliation.case-requested@1 and
// billing.finalization-reconciliation-resolution.applied@1 (above), and
// the late settlement pairs (issue 32): billing.late-settlement-exposure.case-requested@1
// opens or joins its late case (late_case.go);
// billing.late-settlement-command-result.committed@1 (verified through
// readLateSettlementCommandResultForOperations) takes its place in the
// settlement dimension's aggregate at its from revision, the sequence the
// settlement transitions use, so the next transition is no gap;
// billing.case-resolution.applied@1 (exposure aggregate, revision 2,
// verified through readBillingCaseResolutionAppliedForOperations) resolves
// its exposure and closes the case once no exposure of the generation is
// unresolved (late_resolution.go). An applied event delivered before its
// exposure's case-requested event is a revision gap of the exposure
// aggregate: it waits (OPS-2), nothing of it written, and applies after.
// The late case rows move forward only (00015: open → resolved once,
// resolution columns together, nothing else, no delete).
//
// Every core_operations pair of the first release is projected. A pair
// named in Config.Withheld is recorded in operations.unsupported_events
// with a recoverable wait (code CodeUnsupportedPair) instead; pairs that
// are not routed to core_operations are non_retryable.
package projector
