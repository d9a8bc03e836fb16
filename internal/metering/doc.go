// Package metering is the Metering owner's input processor (ADR-031
// Metering; ME-1, MET-*; docs/metering.md): the consumer of the
// metering_input_processor destination on the shared inbox.
//
// It strictly decodes exactly two pairs,
// execution.attempt-eligibility.finalized@1 and
// gateway.evidence-availability.current-changed@1, verifies the carried
// quadruples with event-bound owner reads (Execution's
// readExecutionEligibilityFact@1, Gateway's
// readEvidenceAvailabilitySnapshot@1) before it takes any lock, and then, in
// the one inbox transaction:
//
//  1. locks the attempt's input fence (metering.input_fences, FOR UPDATE);
//  2. advances the right watermark monotonically — the eligibility lane
//     (the one eligibility fact; one usage watermark per deployment +
//     dimension) or the provider-cost lane of the deployment + source
//     dimension — or, when the event is not newer, records already_observed;
//  3. when the lane's inputs call for it, inserts a new immutable Work
//     generation (insert-or-compare);
//  4. returns the sealed MeteringInputProcessorConsumerReceipt@1, which the
//     inbox stores with the effect.
//
// The same event returns the same receipt (the inbox returns the stored
// body); an already_observed receipt freezes the lane state of its first
// processing. Eligibility and gateway usage may arrive in either order: the
// first one leaves the lane waiting_for_gateway_usage or
// waiting_for_execution, the second schedules Work; not_dispatched never
// waits for the gateway. Cost lanes have no counterpart wait. An owner read
// or lock that is unavailable is retryable with nothing written; the same
// revision with another digest is non_retryable.
//
// The metering worker (Worker, Processor; docs/metering.md) claims Work
// under a lease with a fencing token that PostgreSQL itself binds (ME003),
// reads the owners event-bound, and in one transaction writes the
// EligibilityDecision, MeterEvents, the next SettlementInputSnapshot@1 of
// every changed attempt × charge dimension with its pointer CAS and its
// metering.settlement-input.current-changed@1 + billing delivery (ME-1),
// and the applied finish; a local deterministic conflict writes Blocked@1
// instead and the Work stays active. ReadCurrentSettlementInput is the
// verified read of a dimension's Current snapshot.
//
// The provider-cost lane (ProcessCostWork, cost.go; ME-2) turns each
// Gateway cost availability into its one strict result — a
// ProviderCostFact only when available, waiting_for_evidence,
// no_cost_evidence (never a zero cost) or reconciliation_required — or,
// for a local deterministic conflict, conflict evidence + Blocked@1 with the
// same Work kept active. ValidateSettlementInputCurrent (validate.go) is
// Billing's operation-bound, TTL-free current check with its four purposes.
package metering
