// Package receipt holds the acknowledgement and consumer-receipt contracts of
// the outbox publisher (outbox document, "投递与 at-least-once" through
// "Consumer 原子提交"):
//
//   - ActiveConsumerAck@1, the closed union a consumer returns (OB-DELIVER-3);
//   - the four owner receipts an ack names: OperationsProjectionAppliedReceipt@1,
//     MeteringInputProcessorConsumerReceipt@1,
//     BillingFinalizationCoordinatorConsumerReceipt@1 and
//     BillingSettlementCatchUpConsumerReceipt@1;
//   - the facts those receipts bind: MeteringInputWorkAttemptFinished@1,
//     MeteringInputWorkAttemptBlocked@1, EligibilityProcessingConflictEvidence@1,
//     ProviderCostProcessingConflictEvidence@1 and
//     BillingSettlementCatchUpWorkAttemptBlocked@1;
//   - VerifyAck, the check the dispatcher runs before it may acknowledge a
//     delivery (OB-DELIVER-4).
//
// # Objects
//
// Every object has a Go type whose fields follow the spec field for field and
// a shape description (describe.go, package schema: the same style as the
// envelope; generated JSON Schema and TypeScript come from it). DecodeX(doc)
// checks the shape through the description, binds the Go value and checks
// the refinement rules; DecodeTree(v, DecodeX) does the same for a parsed
// value tree. ToJSON() gives the full JSON form and Validate() the refinement
// rules and the shape of ToJSON(). Content-addressed objects add Seal(), which
// fills the default schema and algorithm versions (1, jcs-sha256-v1) and the
// digest of the candidate, VerifyDigest() and Digest(). Decoding checks shape
// and refinement rules; the digest is checked by VerifyDigest, so a caller
// can tell a broken rule from a digest that does not recompute. The four
// receipts embed Header: their own quadruple, fixed route literals, eventId
// and event envelope digest.
//
// Digest candidates (CT-3): each candidate is the full JSON form without the
// repository-owned ref, the object's own time field (appliedAt, committedAt,
// finishedAt, blockedAt, observedAt, detectedAt) and the digest itself; the
// schema version and algorithm version stay in the candidate.
//
// # Errors
//
// Decoding and validation errors are *strict.FieldError values naming the
// JSON path. Shape errors wrap the strict and digest sentinels (CT-2);
// each refinement rule wraps its own sentinel from errors.go. VerifyAck
// returns *AckError, whose Reason is one of the VerifyAck sentinels and
// whose Err carries the underlying decoding or digest error.
//
// # Unions
//
// A union is a struct with a Kind/State literal and one field or pointer per
// branch; Validate rejects a value whose branch data does not match its
// literal. Decoders read the discriminator first and then only the fields of
// the selected branch; a field of another branch is strict.ErrMixedUnion, or
// the rule's own sentinel where the spec names the mixing (a blocked state
// with a finish, a held_for_resolution with work, a case reference).
//
// # Our definitions
//
// The spec refers to two shapes it does not spell out; we define the smallest
// strict form that carries the identities the spec names:
//
//   - MeteringInputWork@1.lane (used by the work-attempt facts): the lane
//     identity without coordination state, {kind=eligibility_and_settlement_input}
//     | {kind=provider_cost; gatewayDeploymentId; sourceEvidenceDimensionKey}.
//   - SettlementEconomicIdentity@1 (the catch-up receipt's
//     settlementEconomicIdentity): the ADR-031 economic identity union
//     {kind=credits} | {kind=entitlement; entitlementKey; unit} |
//     {kind=money; currency}.
//
// Identifiers other than eventId are opaque non-empty strings (eventId is a
// lowercase canonical UUID); revisions, generations, state versions and
// attempt numbers are safe integers ≥ 1, counts ≥ 0 and
// latest*WorkGeneration ≥ 0 (a lane that never scheduled work).
// Sorted arrays compare by UTF-16 code units, like every sorted contract array.
package receipt
