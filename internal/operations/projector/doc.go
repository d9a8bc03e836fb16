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
// # Supported pairs
//
// run.created@2.0, wallet.reserved@2.0 and billing.finalization.committed@1
// (aggregate billing_reservation, revision 2; verified through the Billing
// owner read readBillingFinalizationCommitted, see BillingReads). The other
// core_operations pairs of the first release are recorded in
// operations.unsupported_events with a recoverable wait (code
// CodeUnsupportedPair) until a projector release supports them; pairs that
// are not routed to core_operations are non_retryable.
package projector
