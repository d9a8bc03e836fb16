// Package catchup is the Billing settlement catch-up (ADR-031 "终局后变化采用追加式
// Transition"; BI-2, BI-3, BSC-*; docs/billing-catch-up.md): what happens to
// a dimension after its reservation's successful finalization.
//
// Finalization is absorbing, but Metering keeps appending settlement inputs
// (a provider corrects its count an hour later). Every later input becomes
// an append-only BillingSettlementTransition@1 of its dimension — never an
// edit of the base settlement. Each finalized dimension therefore gets a
// catch-up fence (billing.settlement_catch_up_fences), opened by the
// finalization's own transaction (OpenFencesTx) with an immutable first
// Work generation that always verifies once with the Metering owner — even
// when no newer event arrived — so an event still in flight (or one that
// arrived before the finalization and was absorbed into the watermark) is
// caught up.
//
// The package sits beside internal/billing/finalization and imports the
// Billing core (internal/billing: the finalization fence's
// ApplySettlementInputTx behind FinalizationFenceObserver, the ledger's
// PostSettlementTransitionTx behind TransitionPostings); the core never imports it.
//
// # What it owns (schema billing, migration line "billing", 00020–00024)
//
// The tables are created by the billing migration line
// (internal/billing/schema); their statements are this package's
// (sql/*.sql).
//
//   - settlement_catch_up_fences: one per finalized dimension, opened by
//     the finalization's transaction. States pending_verification,
//     caught_up (on the active generation's own current receipt) and
//     blocked_on_owner_conflict, all bound to the active Work.
//   - settlement_catch_up_works: BillingSettlementCatchUpWork@1, one
//     immutable generation each (dense), with one validation operation.
//   - settlement_catch_up_finishes: BillingSettlementCatchUpWorkAttemptFinished@1,
//     the one finish of a generation (caught_up, or transition_applied /
//     already_evaluated with the successor Work).
//   - settlement_catch_up_claims, settlement_catch_up_attempts (the Started
//     log: attempt number, fencing token, lease) and
//     settlement_catch_up_blocks (BillingSettlementCatchUpWorkAttemptBlocked@1
//     with the owner's conflict fact).
//   - settlement_transitions (BillingSettlementTransition@1) and
//     late_settlement_exposures (LateSettlementExposure@1, open and blocked).
//   - settlement_catch_up_receipts: the Consumer's
//     BillingSettlementCatchUpConsumerReceipt@1 (the inbox's receipt table).
//
// It also writes two tables of the Billing core: the dimension's
// settlement_input_watermarks row (the Consumer is its writer after the
// finalization) and, for a refund, one settlement_transition posting group
// in the ledger (TransitionPostings).
//
// # Three writers, one lock
//
// Three writers touch a dimension, each under the dimension's transaction
// advisory lock (sql/lock.sql), so they serialize; the fence row is also
// locked FOR UPDATE and updated with a compare-and-set on its revision:
//
//   - the consumer of billing_settlement_catch_up (Consumer) advances
//     the dimension's monotonic watermark and, after finalization, reopens
//     the fence with a new Work generation (settlement_catch_up_scheduled);
//     before finalization it hands the input to the finalization fence
//     (finalization_work_scheduled, or held_for_resolution while that fence
//     is in reconciliation; no catch-up Work then);
//   - the finalization opens the fences (OpenFencesTx);
//   - the catch-up worker (Worker) commits, for one Work generation,
//     either one BillingSettlementTransition@1 (with its ledger postings, its
//     LateSettlementExposure@1 for a positive difference, and
//     billing.settlement-transition.committed@1) together with the successor
//     Work, or the fence's caught_up — never one without the other.
//
// # Attempts
//
// Every step of a Work generation runs as one attempt with a fencing token
// and a lease (the Started log). Every write of the step (finish, fence
// change, block) names the token, and the database refuses it unless it is
// the latest attempt of the generation (BC006): a worker whose lease expired
// and was reclaimed writes nothing (StepFencedOut). The claim, release and
// lease renewal are the shared Work primitive's (internal/work, queue
// billing_settlement_catch_up, queue.go): a step that wrote nothing is a
// Retry the Runner releases at once (its slot waits Idle before claiming
// again), a block a Blocked result released after its backoff. When the Metering
// owner answers a conflict with its SettlementInputConflictFact@1 (a
// *SettlementInputOwnerConflictError), the attempt records Blocked@1, the
// fence is blocked_on_owner_conflict with the same Work still to be
// verified, and the claim backs off until a retry succeeds (StepBlocked).
//
// # What it never does
//
//   - It never edits a base settlement or a committed transition, and never
//     charges automatically: a positive difference after release is a
//     late_settlement_exposure (open, blocked, reconcile_before_charge) that
//     never reaches the ledger, and TransitionPostings refuses adjustments
//     (ErrTransitionNotPostable: they need a funding decision).
//   - It never marks a fence caught_up by a transition alone, on another
//     operation's receipt, or while the watermark is ahead.
//   - It never reuses a stale validation: a transition's validation
//     operation derives from its basis, so a newer basis is a new operation.
//   - It never parks an early event without Work: when no fence can bind it
//     the watermark commits without a receipt and the delivery is retried
//     (catch_up_fence_not_bindable).
//   - It never reads another owner's tables and never forges the owner's
//     conflict fact: Metering answers through Metering (package
//     catchupmetering adapts it in process), and only a
//     *SettlementInputOwnerConflictError carrying the owner's fact blocks a
//     Work.
//
// # What PostgreSQL enforces (migrations 00020–00024)
//
// The database is the second guard: the watermark only advances (the core's
// guard, BL002); Works, transitions, exposures, finishes, attempts, blocks
// and receipts are insert-only (BC001, CodeInsertOnly); transitions are
// contiguous per dimension (primary key (dimension, from), foreign key to
// the predecessor's to revision) so no step is applied twice; a fence moves
// one revision at a time, its state revision only with a transition and a
// successor Work, its identity and finalization are frozen and its settled
// amount never rises (no automatic charge after release) (BC003,
// CodeFenceGraph); it cannot be caught_up while the watermark is ahead
// (BC004, CodeCaughtUpAhead); a late_settlement_exposure transition without
// its exposure fails at commit (BC005, CodeExposureMissing); a worker write
// whose fencing token is not the latest attempt of its generation, or a
// token-less fence update that is not the consumer's reopen, is refused
// (BC006, CodeFenced); an attempt outside its graph (not dense, not the
// fence's active, claimable generation) is refused (BC007,
// CodeAttemptGraph). The billing role (oceanway_billing) may select and
// insert, update only the fence's state columns and the claim's attempt and
// availability, and delete nothing.
package catchup
