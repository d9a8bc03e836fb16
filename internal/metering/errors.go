package metering

import "errors"

// Error codes of the input processor (the shared inbox adds its own).
const (
	// Non-retryable.
	CodePairNotConsumed      = "pair_not_consumed"
	CodePayloadInvalid       = "payload_invalid"
	CodeOwnerReadInvalid     = "owner_read_invalid"
	CodeOwnerConflict        = "owner_conflict"
	CodeEligibilityConflict  = "eligibility_fact_conflict"
	CodeAvailabilityConflict = "availability_revision_conflict"
	CodeWorkConflict         = "work_generation_conflict"
	CodeEnvelopeIdentity     = "envelope_identity_mismatch"
	// Retryable.
	CodeOwnerReadUnavailable = "owner_read_unavailable"
	CodeOwnerFactNotFound    = "owner_fact_not_found"
)

var (
	// ErrPairNotConsumed: the event pair is not one of the two this consumer decodes.
	ErrPairNotConsumed = errors.New("metering: event pair is not consumed by the input processor")
	// ErrOwnerConflict: the owner answered conflicting for the event's quadruple.
	ErrOwnerConflict = errors.New("metering: owner read answered conflicting")
	// ErrOwnerNotFound: the owner does not (yet) have the event's object.
	ErrOwnerNotFound = errors.New("metering: owner read answered not_found")
	// ErrOwnerUnavailable: the owner read failed (no answer).
	ErrOwnerUnavailable = errors.New("metering: owner read unavailable")
	// ErrEligibilityConflict: the attempt already has another eligibility fact.
	ErrEligibilityConflict = errors.New("metering: attempt already observed another eligibility fact")
	// ErrAvailabilityConflict: the same availability state version with another snapshot.
	ErrAvailabilityConflict = errors.New("metering: same availability revision, different snapshot")
	// ErrWorkConflict: a stored work generation differs from the one recomputed.
	ErrWorkConflict = errors.New("metering: stored work generation differs")
	// ErrEnvelopeIdentity: the envelope's aggregate does not match its payload.
	ErrEnvelopeIdentity = errors.New("metering: envelope aggregate does not match the payload")
)

// SQLSTATEs the metering schema raises (the database is the second guard).
const (
	// SQLStateInsertOnly: update or delete of an insert-only fact (receipts, works).
	SQLStateInsertOnly = "ME001"
	// SQLStateBackwards: a fence revision, watermark or generation moved backwards.
	SQLStateBackwards = "ME002"
	// SQLStateFenced: a fact or finish whose fencing token is not the Work's
	// latest attempt, or a fact of an already finished Work.
	SQLStateFenced = "ME003"
	// SQLStateSettlementChain: a settlement input version that is not the
	// next one, or a pointer CAS that does not advance by exactly one.
	SQLStateSettlementChain = "ME004"
	// SQLStateSettlementAtomic: at COMMIT a settlement input version lacks
	// its pointer move, its current-changed event or the event's billing
	// delivery, or names a predecessor digest that is not stored (ME-1).
	SQLStateSettlementAtomic = "ME005"
)
